package io.agentnest.docker.internal;

import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.Version;
import io.agentnest.BackendUnavailableException;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.HealthCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Host checks for the Docker backend. */
public final class DockerDoctor {
  static final String RUNSC_SNIPPET =
      "{\"runtimes\":{\"runsc\":{\"path\":\"/usr/bin/runsc\",\"runtimeArgs\":[\"--network=none\",\"--oci-seccomp\"]}},"
          + "\"experimental\":true}";

  private DockerDoctor() {}

  public static List<HealthCheck> run() {
    List<HealthCheck> out = new ArrayList<>();
    DockerEngine engine;
    try {
      engine = DockerEngine.connect();
    } catch (BackendUnavailableException e) {
      out.add(
          HealthCheck.fail(
              "docker engine",
              String.valueOf(e.getMessage()),
              "start Docker: 'scripts/setup-host.sh' on Debian (installs docker.io, runsc,"
                  + " mmdebstrap and starts dockerd), or 'dockerd &'; set DOCKER_HOST if it"
                  + " listens elsewhere"));
      return out;
    }
    Version v;
    Info info;
    try {
      v = engine.client().versionCmd().exec();
      info = engine.info();
    } catch (RuntimeException e) {
      out.add(
          HealthCheck.fail(
              "docker engine", "reachable but failing: " + e, "check the daemon's log"));
      return out;
    }
    out.add(
        HealthCheck.ok(
            "docker engine",
            "Docker " + v.getVersion() + " (API " + v.getApiVersion() + ") at " + engine.host()));

    // Runtimes
    out.add(
        HealthCheck.ok(
            "runtime runc",
            "registered; default runtime "
                + info.getRawValues().getOrDefault("DefaultRuntime", "runc")));
    var runsc = RunscRegistration.of(info);
    if (runsc.isPresent()) {
      out.add(HealthCheck.ok("runtime runsc (gVisor)", "registered"));
      out.addAll(runsc.get().checks());
    } else {
      boolean installed = Files.isExecutable(Path.of("/usr/bin/runsc"));
      out.add(
          HealthCheck.warn(
              "runtime runsc (gVisor)",
              installed ? "runsc is installed but not registered in Docker" : "not installed",
              (installed
                      ? ""
                      : "install runsc (Debian 12: apt-get install -t bookworm-backports runsc,"
                          + " release 20240729, systrap); ")
                  + "add to /etc/docker/daemon.json: "
                  + RUNSC_SNIPPET
                  + " and restart dockerd (scripts/setup-host.sh does both)"));
    }
    out.add(
        KataCheck.of(
            info.getRuntimes() == null ? Map.of() : new LinkedHashMap<>(info.getRuntimes()),
            Files::isExecutable));
    if (info.getRuntimes() != null && info.getRuntimes().containsKey(DockerGpus.NVIDIA_RUNTIME)) {
      out.add(
          HealthCheck.ok(
              "NVIDIA runtime (gpu preset)", "registered: sandboxes with gpus(n) can start"));
    } else {
      out.add(
          HealthCheck.warn(
              "NVIDIA runtime (gpu preset)",
              "not registered: a sandbox asking for GPUs (gpus(n), --preset gpu) is refused",
              "on a host with an NVIDIA GPU: install the driver and the NVIDIA Container Toolkit,"
                  + " run 'nvidia-ctk runtime configure --runtime=docker' and restart dockerd"));
    }
    if (!Boolean.TRUE.equals(v.getExperimental())) {
      out.add(
          HealthCheck.warn(
              "experimental features",
              "off: checkpoints (fork with process memory on gVisor) are unavailable",
              "set \"experimental\": true in /etc/docker/daemon.json and restart dockerd"));
    }

    // Base image
    if (engine.imageExists(SandboxConfig.DEFAULT_IMAGE)) {
      out.add(HealthCheck.ok("base image", SandboxConfig.DEFAULT_IMAGE + " present"));
    } else {
      out.add(
          HealthCheck.fail(
              "base image",
              SandboxConfig.DEFAULT_IMAGE + " missing",
              "build it offline: 'agentnest image build' (needs mmdebstrap)"));
    }

    // cgroups and kernel features
    String cg =
        "cgroup v"
            + info.getRawValues().getOrDefault("CgroupVersion", "?")
            + ", driver "
            + info.getRawValues().getOrDefault("CgroupDriver", "?");
    List<String> missing = new ArrayList<>();
    if (!Boolean.TRUE.equals(info.getMemoryLimit())) {
      missing.add("memory limit");
    }
    if (!Boolean.TRUE.equals(info.getRawValues().get("PidsLimit"))) {
      missing.add("pids limit");
    }
    if (!Boolean.TRUE.equals(info.getRawValues().get("CpuCfsQuota"))) {
      missing.add("CPU quota");
    }
    if (missing.isEmpty()) {
      out.add(HealthCheck.ok("cgroups", cg + "; memory, pids and CPU limits supported"));
    } else {
      out.add(
          HealthCheck.fail(
              "cgroups",
              cg + "; missing: " + String.join(", ", missing),
              "enable the cgroup controllers in the kernel command line (e.g."
                  + " cgroup_enable=memory) and restart"));
    }
    Object secopts = info.getRawValues().get("SecurityOptions");
    if (secopts != null && secopts.toString().contains("seccomp")) {
      out.add(HealthCheck.ok("seccomp", "supported by the engine"));
    } else {
      out.add(
          HealthCheck.fail(
              "seccomp",
              "the engine reports no seccomp support",
              "use a kernel with CONFIG_SECCOMP_FILTER and a Docker built with seccomp"));
    }
    out.add(HealthCheck.ok("kernel", info.getKernelVersion() + " on " + info.getOperatingSystem()));
    if ("unix".equals(engine.host().getScheme())) {
      // Only a local engine's kernel is this host's.
      out.addAll(new KernelSurface().checks());
    }
    out.add(
        HealthCheck.ok(
            "logging",
            "sandboxes use log driver 'none' (daemon default: " + info.getLoggingDriver() + ")"));

    // Disk space where the engine keeps images and containers
    String root = info.getDockerRootDir();
    if (root != null && Files.isDirectory(Path.of(root))) {
      try {
        long free = Files.getFileStore(Path.of(root)).getUsableSpace();
        long gb = free >> 30;
        String detail = gb + " GiB free under " + root;
        if (free < (1L << 30)) {
          out.add(HealthCheck.fail("disk space", detail, "free space under " + root));
        } else if (free < (5L << 30)) {
          out.add(HealthCheck.warn("disk space", detail, "keep at least 5 GiB free"));
        } else {
          out.add(HealthCheck.ok("disk space", detail));
        }
      } catch (IOException e) {
        out.add(HealthCheck.warn("disk space", "cannot read " + root + ": " + e.getMessage(), ""));
      }
    } else {
      out.add(HealthCheck.ok("disk space", "engine root " + root + " is not on this host"));
    }
    return out;
  }
}
