package io.agentnest;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What {@link Sandbox}'s static factories call: the runtime that makes, finds and restores
 * sandboxes. Exactly one implementation is found with {@link java.util.ServiceLoader} under {@code
 * META-INF/services/io.agentnest.SandboxRuntime} (agentnest-core ships it), so that the API depends
 * on this interface and never on the implementation's package. It is the API's own seam (as {@code
 * java.sql.Driver} is {@code java.sql}'s), not part of the backend SPI: the API sits below the SPI
 * and imports none of it. Applications never call it.
 */
public interface SandboxRuntime {
  /** Creates a sandbox; throws when the backend cannot enforce the configuration. */
  Sandbox create(SandboxConfig config);

  /**
   * A builder starting from preset {@code name} ({@link SandboxConfig#preset}); the presets and
   * their files are the configuration's, above the API.
   *
   * @throws ConfigException for an unknown preset, naming the known ones
   */
  default SandboxConfig.Builder preset(String name) {
    throw new UnsupportedOperationException("this runtime has no presets");
  }

  /** Reattaches to a running managed sandbox of the default backend by id (or unique prefix). */
  Sandbox connect(String idOrPrefix);

  /**
   * Reattaches like {@link #connect(String)}, with the approval rules and handler the caller holds
   * now ({@link Sandbox#connect(String, ApprovalPolicy, ApprovalHandler)}). A runtime that cannot
   * apply them refuses (fail closed).
   */
  default Sandbox connect(
      String idOrPrefix, ApprovalPolicy approvals, @Nullable ApprovalHandler handler) {
    if (approvals.isInactive() && handler == null) {
      return connect(idOrPrefix);
    }
    throw new UnsupportedControlException(
        "this runtime cannot apply approvals when it reattaches to a sandbox: connect without"
            + " them, or use agentnest-core's runtime");
  }

  /** Managed sandboxes of the default backend. */
  List<SandboxInfo> list();

  /** Starts a sandbox from a snapshot, with {@code config} instead of the saved one when given. */
  Sandbox restore(String name, @Nullable SandboxConfig config);

  /** The valid snapshots in this installation's store, newest first. */
  List<SnapshotInfo> snapshots();

  /**
   * Every snapshot of the store with the result of its checks, tampered ones included, newest
   * first; {@code hashParts} also hashes every part (reads them all).
   */
  default List<SnapshotCheck> checkSnapshots(boolean hashParts) {
    return snapshots().stream().map(s -> new SnapshotCheck(s.name(), s, null)).toList();
  }

  /** Removes a snapshot (also a tampered one); false when there is none by that name. */
  boolean removeSnapshot(String name);

  /** Removes what AgentNest left behind on the named backend ({@link Sandbox#prune}). */
  PruneReport prune(String backend, PruneOptions options);

  /** Starts a warm pool ({@link SandboxPool#start}). */
  default SandboxPool startPool(SandboxConfig template, PoolOptions options) {
    throw new UnsupportedOperationException("this runtime has no sandbox pools");
  }

  /** The running pools of this process. */
  default List<SandboxPool> pools() {
    return List.of();
  }

  /** Whether a listed sandbox is a pool member not yet handed out. */
  default boolean isIdlePoolMember(SandboxInfo info) {
    return false;
  }

  /**
   * Whether this process destroys the sandboxes it still owns when it exits ({@link
   * Sandbox#destroyOnExit}).
   */
  default void destroyOnExit(boolean on) {}
}
