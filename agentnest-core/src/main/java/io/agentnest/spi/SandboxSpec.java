package io.agentnest.spi;

import io.agentnest.UnsupportedControlException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What the policy layer asks a backend to create. Every field is a control the backend must enforce
 * or refuse.
 *
 * @param image image reference
 * @param runtime OCI runtime name, or null for the backend's default
 * @param command the main process (the agent bootstrap)
 * @param user numeric uid:gid
 * @param env environment of the main process
 * @param workdir working directory of the main process
 * @param labels management and user labels
 * @param cpus CPU limit in cores
 * @param memoryBytes memory limit (swap included)
 * @param pidsLimit maximum number of processes
 * @param tmpfs size-limited tmpfs mounts: path to size in bytes
 * @param readOnlyRootFilesystem mount the root filesystem read-only
 * @param seccompProfileJson seccomp profile to apply
 * @param noNewPrivileges set no_new_privs
 * @param dropAllCapabilities drop every Linux capability
 * @param networkDisabled no network interface but loopback
 * @param openFilesLimit per-process limit of open files
 */
public record SandboxSpec(
    String image,
    @Nullable String runtime,
    List<String> command,
    String user,
    Map<String, String> env,
    String workdir,
    Map<String, String> labels,
    double cpus,
    long memoryBytes,
    long pidsLimit,
    Map<String, Long> tmpfs,
    boolean readOnlyRootFilesystem,
    String seccompProfileJson,
    boolean noNewPrivileges,
    boolean dropAllCapabilities,
    boolean networkDisabled,
    long openFilesLimit) {
  public SandboxSpec {
    command = List.copyOf(command);
    env = Map.copyOf(env);
    labels = Map.copyOf(labels);
    tmpfs = Map.copyOf(tmpfs);
  }

  /**
   * Refuses this spec where it weakens a control every backend must enforce: backends only know how
   * to run sandboxes hardened, and say so in the same words.
   *
   * @param backend the refusing backend's name, for the message
   */
  public void requireHardened(String backend) {
    List<String> weakened = new ArrayList<>();
    if (!networkDisabled) {
      weakened.add("network (it must be 'none')");
    }
    if (!dropAllCapabilities) {
      weakened.add("capabilities (all must be dropped)");
    }
    if (!noNewPrivileges) {
      weakened.add("no-new-privileges (it must be set)");
    }
    if (!weakened.isEmpty()) {
      throw new UnsupportedControlException(
          "the "
              + backend
              + " backend cannot run a sandbox with these controls weakened: "
              + String.join(", ", weakened)
              + "; remove the override, it enforces all of them");
    }
  }
}
