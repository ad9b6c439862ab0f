package io.agentnest.spi;

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
}
