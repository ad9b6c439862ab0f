package io.agentnest.docker.internal;

import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.model.AccessMode;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import com.github.dockerjava.api.model.Ulimit;
import com.github.dockerjava.api.model.Volume;
import io.agentnest.spi.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Translates a {@link SandboxSpec} into Docker's container definition: the hardened host config
 * every sandbox gets, and the refusal of a spec that weakens what this backend always enforces.
 * Pure: no engine call, so every rule here is unit-tested.
 */
final class ContainerSpecs {
  private ContainerSpecs() {}

  /** This backend only knows how to run sandboxes hardened; anything else is refused. */
  static void refuseWeakened(SandboxSpec spec) {
    spec.requireHardened("docker");
  }

  /**
   * The host config of a sandbox on {@code runtime} (the daemon's name, null for its default), with
   * {@code bulk} bound read-only at {@link BulkDirs#MOUNT} when there is one.
   */
  static HostConfig hostConfig(SandboxSpec spec, @Nullable String runtime, @Nullable Path bulk) {
    HostConfig hc =
        HostConfig.newHostConfig()
            .withReadonlyRootfs(spec.readOnlyRootFilesystem())
            .withCapDrop(Capability.ALL)
            .withSecurityOpts(
                List.of(
                    "no-new-privileges:true",
                    "seccomp=" + GvisorSeccomp.adapt(spec.seccompProfileJson(), runtime)))
            .withPidsLimit(spec.pidsLimit())
            .withMemory(spec.memoryBytes())
            .withMemorySwap(spec.memoryBytes())
            .withNanoCPUs((long) (spec.cpus() * 1_000_000_000L))
            .withNetworkMode("none")
            // An output flood must never reach the host's disk through a log driver.
            .withLogConfig(new LogConfig(LogConfig.LoggingType.NONE))
            // No --init: the agent's bootstrap is pid 1 itself. Docker's init kept copies of
            // the channel pipes open in a process sandbox code could reach through /proc.
            .withInit(false)
            .withIpcMode("private")
            .withTmpFs(tmpfs(spec))
            .withUlimits(
                List.of(new Ulimit("nofile", spec.openFilesLimit(), spec.openFilesLimit())))
            .withAutoRemove(false);
    if (runtime != null) {
      hc.withRuntime(runtime);
    }
    if (spec.cpuShares() > 0) {
      hc.withCpuShares(spec.cpuShares());
    }
    if (spec.gpus() > 0) {
      hc.withDeviceRequests(List.of(DockerGpus.request(spec.gpus())));
    }
    if (bulk != null) {
      hc.withBinds(new Bind(bulk.toString(), new Volume(BulkDirs.MOUNT), AccessMode.ro));
    }
    return hc;
  }

  /**
   * Fills the container-level fields: the agent's command, user, {@code env} (the spec's, plus the
   * agent link's when there is one) and attached stdio.
   */
  static CreateContainerCmd container(
      CreateContainerCmd cmd,
      SandboxSpec spec,
      Map<String, String> env,
      Map<String, String> labels,
      HostConfig hc) {
    return cmd.withCmd(spec.command())
        .withEntrypoint(List.of())
        .withUser(spec.user())
        .withEnv(env(env))
        .withWorkingDir(spec.workdir())
        .withLabels(labels)
        .withAttachStdin(true)
        .withAttachStdout(true)
        .withAttachStderr(true)
        .withStdinOpen(true)
        .withStdInOnce(false)
        .withTty(false)
        .withNetworkDisabled(true)
        .withHostConfig(hc);
  }

  /** Scratch mounts: /tmp is sticky and shared, every other one belongs to the sandbox's user. */
  static Map<String, String> tmpfs(SandboxSpec spec) {
    Map<String, String> out = new LinkedHashMap<>();
    String[] ug = spec.user().split(":");
    String uid = ug[0];
    String gid = ug.length > 1 ? ug[1] : ug[0];
    spec.tmpfs()
        .forEach(
            (path, size) -> {
              String opts = "rw,nosuid,nodev,size=" + size;
              if (path.equals("/tmp")) {
                opts += ",mode=1777";
              } else {
                opts += ",mode=0755,uid=" + uid + ",gid=" + gid;
              }
              out.put(path, opts);
            });
    return out;
  }

  static List<String> env(Map<String, String> env) {
    List<String> out = new ArrayList<>();
    env.forEach((k, v) -> out.add(k + "=" + v));
    return out;
  }
}
