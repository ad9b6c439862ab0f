package io.agentnest.internal.pool;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;

/** Where a {@link WarmPool}'s members come from; one implementation per source (and a fake). */
interface Members<M> {
  /** Starts one member, its agent waiting for its first frame; blocks until it is started. */
  M start();

  /** Whether a waiting member can still be handed out (its agent did not die). */
  boolean alive(M member);

  /** Destroys a member that is not handed out; never throws. */
  void destroy(M member);

  /**
   * Refuses {@code config} before a member is taken for it, for what no member could fix (its audit
   * log has no room): such a refusal must not use up waiting members.
   */
  default void precheck(SandboxConfig config) {}

  /**
   * Hands {@code member} to a user with {@code config}; {@code onRelease} runs once when that
   * sandbox is destroyed or detached. Throws when the hand-out failed (the pool destroys it).
   */
  Sandbox handOut(M member, SandboxConfig config, Runnable onRelease);
}
