package io.agentnest.spi;

import io.agentnest.ResourceUsage;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * An isolation backend (Docker, Kubernetes, ...), found with {@link java.util.ServiceLoader} under
 * {@code META-INF/services/io.agentnest.spi.RuntimeBackend}. Implementations translate a {@link
 * SandboxSpec} into their own primitives and must refuse (throw {@link
 * io.agentnest.UnsupportedControlException}) any control they cannot enforce.
 */
public interface RuntimeBackend {
  /** The name used in configuration, e.g. {@code docker}. */
  String name();

  /**
   * Creates and starts a sandbox whose main process runs {@link SandboxSpec#command()}, with a
   * connection to that process's stdin/stdout already open.
   */
  BackendSandbox create(SandboxSpec spec);

  /** Opens a new connection to the agent of a running sandbox. */
  BackendSandbox attach(String id);

  /** Managed sandboxes, running or not. */
  List<SandboxInfo> list();

  /** Looks one managed sandbox up. */
  Optional<SandboxInfo> inspect(String id);

  /** Removes the sandbox and everything it owns; a no-op when it is already gone. */
  void destroy(String id);

  /** Every resource this backend created for AgentNest, across all owners. */
  /**
   * What the sandbox uses right now (CPU, memory), measured once; empty when this backend cannot
   * tell or the sandbox is gone. May take as long as the engine's sampling interval (about a
   * second): callers that ask often cache the answer.
   */
  default Optional<ResourceUsage> usage(String id) {
    return Optional.empty();
  }

  default List<ManagedResource> resources() {
    return List.of();
  }

  /** Removes one resource found by {@link #resources()}; a no-op when it is already gone. */
  default void remove(ManagedResource resource) {
    if (resource.kind().equals("container")) {
      destroy(resource.id());
    }
  }

  /** Checks of this backend's host for {@code agentnest doctor}; never throws. */
  default List<HealthCheck> diagnose() {
    return List.of();
  }

  /**
   * Whether this backend can checkpoint the processes' memory of sandboxes made from {@code config}
   * ({@link #forkWithCheckpoint}, {@link #checkpointTo}, {@link #createFromCheckpoint}): Docker on
   * gVisor, microVM guests. Those calls may still decline where the host cannot (gVisor needs the
   * engine's root directory). Core asks this before it tries, and never checkpoints a sandbox with
   * secret variables (their values are in its memory, and a checkpoint is written to disk).
   */
  default boolean checkpointsMemory(SandboxConfig config) {
    return false;
  }

  /**
   * Copies sandbox {@code id} with its processes' memory by checkpointing it and restoring the
   * checkpoint into itself and into {@code n} new sandboxes created from {@code spec}; returns the
   * copies' connections. Empty, with nothing done, when the runtime cannot (runc here: no CRIU).
   * {@code beforeCheckpoint} runs just before the sandbox stops for its checkpoint (its connection
   * is about to end), {@code parentRestored} gets its new connection once it runs again. A backend
   * whose connection to the parent survives the checkpoint (a microVM guest only pauses) calls
   * neither.
   */
  default Optional<List<BackendSandbox>> forkWithCheckpoint(
      String id,
      SandboxSpec spec,
      int n,
      Runnable beforeCheckpoint,
      Consumer<BackendSandbox> parentRestored) {
    return Optional.empty();
  }

  /**
   * The host directory that sandbox {@code id} sees read-only at {@code /run/agentnest}, where a
   * listening socket lets bulk state (fork) bypass the slower stdio channel. Empty when the sandbox
   * has none (a remote engine, gVisor, or a sandbox made by an older version).
   */
  default Optional<Path> bulkDirectory(String id) {
    return Optional.empty();
  }

  /**
   * Checkpoints running sandbox {@code id} with its processes' memory, restores it in place, and
   * leaves the checkpoint image's files under {@code dir} (created; regular files only). False,
   * with nothing done, when the runtime or host cannot (runc here: no CRIU; gVisor needs the
   * engine's root directory writable by this process). {@code beforeCheckpoint} runs just before
   * the sandbox stops (its connection is about to end), {@code restored} gets its new connection
   * once it runs again; a backend whose connection survives the checkpoint calls neither. Throws
   * when the checkpoint was tried and failed.
   */
  default boolean checkpointTo(
      String id, Path dir, Runnable beforeCheckpoint, Consumer<BackendSandbox> restored) {
    return false;
  }

  /**
   * Creates a sandbox from {@code spec} and starts it from the checkpoint image in {@code dir} (as
   * written by {@link #checkpointTo}); its agent runs already, with the memory it had. Empty, with
   * nothing done, when the runtime or host cannot restore a checkpoint.
   */
  default Optional<BackendSandbox> createFromCheckpoint(SandboxSpec spec, Path dir) {
    return Optional.empty();
  }

  /**
   * Sets {@code labels} on running sandbox {@code id} (a pooled sandbox's owner and expiry at
   * hand-out); false when the backend cannot change labels after create (Docker), where the host
   * state records them instead.
   */
  default boolean relabel(String id, Map<String, String> labels) {
    return false;
  }

  /**
   * Whether {@link #setCpuShares} can change the CPU weight of a running sandbox made from {@code
   * spec}. The pool starts its members at a low weight only where it can restore it at hand-out.
   */
  default boolean canSetCpuShares(SandboxSpec spec) {
    return false;
  }

  /**
   * Sets the relative CPU weight of running sandbox {@code id} ({@link SandboxSpec#cpuShares}, 2 to
   * {@link SandboxSpec#MAX_CPU_SHARES}); false where the backend cannot.
   */
  default boolean setCpuShares(String id, int shares) {
    return false;
  }

  /** The engine's id (content digest) of a local image, if it has one. */
  default Optional<String> imageId(String image) {
    return Optional.empty();
  }
}
