package io.agentnest;

import java.util.List;

/**
 * Started sandboxes kept warm, so that a sandbox is ready in milliseconds instead of a container
 * start. While a pool runs, {@link Sandbox#create(SandboxConfig)} with a configuration that shapes
 * the same sandbox as the pool's template (image, backend, runtime, limits, network policy, tenant,
 * labels, user, security settings) takes from it; per-use settings (plain and secret environment
 * variables, TTL, audit log, approvals) are applied at hand-out.
 *
 * <p>A pooled sandbox is indistinguishable from a fresh one: it waits with its agent started but
 * before it has read anything from the host, so nothing has run in it (no interpreter, no file, no
 * process of anyone); its secrets and environment arrive at hand-out, its TTL starts then, and the
 * hand-out is audited as {@code sandbox.acquired}. Each sandbox is handed out once and destroyed
 * when its user closes it.
 *
 * <pre>{@code
 * try (SandboxPool pool = SandboxPool.start(SandboxConfig.defaults(),
 *         PoolOptions.builder().minIdle(4).build())) {
 *   try (Sandbox sb = Sandbox.create(SandboxConfig.builder().secretEnv("TOKEN", t).build())) {
 *     sb.runCode("print(1 + 1)");                 // no container start on the way
 *   }
 * }
 * }</pre>
 *
 * <p>See docs/pools.md.
 */
public interface SandboxPool extends AutoCloseable {

  /** Starts a pool of sandboxes shaped by {@code template}; it fills in the background. */
  static SandboxPool start(SandboxConfig template, PoolOptions options) {
    return SandboxRuntimes.get().startPool(template, options);
  }

  /** The running pools of this process. */
  static List<SandboxPool> running() {
    return SandboxRuntimes.get().pools();
  }

  /**
   * Whether {@code info} is a pool member still waiting for a user (not yet handed out), as {@code
   * agentnest ls} shows it.
   */
  static boolean isIdleMember(SandboxInfo info) {
    return SandboxRuntimes.get().isIdlePoolMember(info);
  }

  /** The pool's name (its members' {@code agentnest.pool} label). */
  String name();

  /** The configuration every member is started with. */
  SandboxConfig template();

  PoolOptions options();

  /** Whether a sandbox of {@code config} can come from this pool. */
  boolean matches(SandboxConfig config);

  /** A sandbox with the template's configuration. */
  default Sandbox acquire() {
    return acquire(template());
  }

  /**
   * A sandbox with {@code config}, which must {@link #matches match}; waits or fails as {@link
   * PoolOptions#onExhausted()} says when {@code max_total} are out.
   *
   * @throws PoolExhaustedException when none is free in time
   * @throws ConfigException when {@code config} does not match
   */
  Sandbox acquire(SandboxConfig config);

  PoolStats stats();

  /** Destroys the waiting sandboxes and stops refilling; handed-out ones live on. Idempotent. */
  @Override
  void close();
}
