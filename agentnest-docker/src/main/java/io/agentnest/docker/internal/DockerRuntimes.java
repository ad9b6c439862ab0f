package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.model.Info;
import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.Sizes;
import io.agentnest.UnsupportedControlException;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The daemon's info and its registered OCI runtimes (runc, runsc, kata...), read once. */
final class DockerRuntimes {
  private final DockerClient client;
  private final EngineErrors errors;
  private volatile @Nullable Map<String, Object> runtimes;
  private volatile @Nullable String defaultRuntime;
  private volatile int hostCpus;
  private volatile long hostMemory;

  DockerRuntimes(DockerClient client, EngineErrors errors) {
    this.client = client;
    this.errors = errors;
  }

  Info info() {
    try {
      return client.infoCmd().exec();
    } catch (DockerException e) {
      throw new AgentNestException("Docker 'info' failed: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }

  Map<String, Object> registered() {
    Map<String, Object> r = runtimes;
    if (r == null) {
      Info info = info();
      Map<String, Object> found = new LinkedHashMap<>();
      if (info.getRuntimes() != null) {
        found.putAll(info.getRuntimes());
      }
      r = found;
      // docker-java's Info has no field for it; the engine's JSON has had it since API 1.25.
      Object def = info.getRawValues().get("DefaultRuntime");
      defaultRuntime = def instanceof String d && !d.isBlank() ? d : "runc";
      hostCpus = info.getNCPU() == null ? 0 : info.getNCPU();
      hostMemory = info.getMemTotal() == null ? 0 : info.getMemTotal();
      runtimes = r;
    }
    return r;
  }

  /**
   * Refuses limits the engine's host cannot give, before Docker does (its answer is a bare {@code
   * Status 400} for CPUs and silence for memory, which then fails at the first allocation): the
   * message names the host's size and the fix.
   */
  void checkFits(double cpus, long memoryBytes) {
    registered();
    int c = hostCpus;
    long m = hostMemory;
    if (c > 0 && cpus > c) {
      throw new ConfigException(
          "cpus "
              + BigDecimal.valueOf(cpus).stripTrailingZeros().toPlainString()
              + " is more than the Docker host has ("
              + c
              + " CPUs): give at most --cpus "
              + c
              + " (cpus: "
              + c
              + " in agentnest.yaml), or run on a larger host");
    }
    if (m > 0 && memoryBytes > m) {
      throw new ConfigException(
          "memory "
              + Sizes.format(memoryBytes)
              + " is more than the Docker host has ("
              + Sizes.format(m >> 20 << 20)
              + "): give at most --memory "
              + Sizes.format(m >> 30 << 30 == 0 ? m >> 20 << 20 : m >> 30 << 30)
              + ", or run on a larger host");
    }
  }

  /** The runtime the daemon uses when a container names none. */
  String defaultRuntime() {
    registered();
    String d = defaultRuntime;
    return d == null ? "runc" : d;
  }

  /** Maps the runtime alias to the daemon's name and refuses one the daemon does not know. */
  @Nullable String resolve(@Nullable String requested) {
    if (requested == null || requested.isBlank()) {
      return null;
    }
    String name = requested.equals("gvisor") ? "runsc" : requested;
    if (name.equals("kata")) {
      name = registered().containsKey("kata") ? "kata" : "kata-runtime";
    }
    if (!registered().containsKey(name)) {
      throw new UnsupportedControlException(
          "runtime '"
              + requested
              + "' is not registered in the Docker daemon (it has "
              + registered().keySet()
              + "): install it and add it to /etc/docker/daemon.json, e.g. "
              + "{\"runtimes\":{\"runsc\":{\"path\":\"/usr/bin/runsc\",\"runtimeArgs\":"
              + "[\"--network=none\"]}}}, then restart dockerd; 'agentnest doctor' checks it");
    }
    return name;
  }

  /**
   * Whether {@code runtime} (the daemon's name) runs the container's processes on this host's
   * kernel, so a Unix socket bind-mounted in from the host can be connected to (the agent link).
   * Runtimes with a kernel of their own (gVisor, Kata's VM) cannot without flags of theirs.
   */
  static boolean sharesHostKernel(String runtime) {
    return runtime.equals("runc")
        || runtime.equals("io.containerd.runc.v2")
        || runtime.equals("crun");
  }

  static boolean isGvisor(@Nullable String runtime) {
    return runtime != null && runtime.contains("runsc");
  }
}
