package io.agentnest.docker.internal;

import com.github.dockerjava.api.model.DeviceRequest;
import io.agentnest.UnsupportedControlException;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * GPUs for a sandbox: Docker device requests (driver nvidia, capability gpu), given only where the
 * engine has the NVIDIA runtime registered. Anything else is refused before a container exists, so
 * a sandbox that asked for a GPU never runs on the CPU silently.
 */
final class DockerGpus {
  /**
   * The runtime name the NVIDIA Container Toolkit registers ({@code nvidia-ctk runtime configure}).
   */
  static final String NVIDIA_RUNTIME = "nvidia";

  private DockerGpus() {}

  /**
   * Refuses {@code gpus > 0} unless the engine ({@code registered} runtimes) can give them to a
   * container of {@code runtime} (the daemon's name; null for its default).
   */
  static void check(Set<String> registered, @Nullable String runtime, int gpus) {
    if (gpus <= 0) {
      return;
    }
    if (DockerRuntimes.isGvisor(runtime)) {
      throw new UnsupportedControlException(
          "the sandbox asks for "
              + gpus
              + " GPU(s), which AgentNest does not give to gVisor (runsc) sandboxes: use runtime"
              + " runc (or nvidia) for the gpu preset");
    }
    if (!registered.contains(NVIDIA_RUNTIME)) {
      throw new UnsupportedControlException(
          "the sandbox asks for "
              + gpus
              + " GPU(s), but the Docker engine has no NVIDIA runtime (registered: "
              + registered
              + "): install the NVIDIA driver and the NVIDIA Container Toolkit, run 'nvidia-ctk"
              + " runtime configure --runtime=docker' and restart dockerd ('agentnest doctor'"
              + " checks it); a GPU sandbox never falls back to the CPU");
    }
  }

  /** The device request for {@code gpus} NVIDIA GPUs. */
  static DeviceRequest request(int gpus) {
    return new DeviceRequest()
        .withDriver(NVIDIA_RUNTIME)
        .withCount(gpus)
        .withCapabilities(List.of(List.of("gpu")));
  }
}
