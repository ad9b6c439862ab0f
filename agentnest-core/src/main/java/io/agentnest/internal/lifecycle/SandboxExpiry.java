package io.agentnest.internal.lifecycle;

import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

/**
 * One sandbox's expiry, armed in three places: the agent (which ends the sandbox when no host is
 * left to do it), the host state (read by 'prune' and by handles in other processes) and, when this
 * process owns the sandbox, the {@link ExpiryReaper}. The expiry is the host's: the agent is only
 * told.
 */
public final class SandboxExpiry {
  private static final Duration ANSWER = Duration.ofSeconds(10);

  private final String sandboxId;
  private final String backend;
  private final AgentChannel channel;
  private final Runnable expire;
  private volatile Instant expiresAt;

  /** Who the host state names as owner: this process, or the one recorded before a reattach. */
  private volatile String owner = SecurityPolicy.ownerId();

  /**
   * {@code expire} ends the sandbox when the reaper fires; {@code backend} is the name the host
   * state records.
   */
  public SandboxExpiry(
      String sandboxId, String backend, AgentChannel channel, Instant expiresAt, Runnable expire) {
    this.sandboxId = sandboxId;
    this.backend = backend;
    this.channel = channel;
    this.expiresAt = expiresAt;
    this.expire = expire;
  }

  public Instant expiresAt() {
    return expiresAt;
  }

  /** Sets the expiry without arming it (the caller arms it next). */
  public void setExpiresAt(Instant at) {
    expiresAt = at;
  }

  public void setOwner(String owner) {
    this.owner = owner;
  }

  /**
   * Tells the agent, the host state and this process's reaper about the current expiry. {@code
   * reattached}: the agent keeps its own expiry when it is later (set by a handle in another
   * process or home, which this one does not know about).
   */
  public void arm(boolean reattached) {
    armAfter(tellAgent(channel, expiresAt, reattached));
  }

  /**
   * Sends {@code expiresAt} to the agent of {@code channel} before the sandbox's host objects exist
   * (a pooled hand-out builds them while the agent answers); arm it with {@link #armAfter} once
   * they do, with the same expiry set by {@link #setExpiresAt}.
   */
  public static CompletableFuture<Frame> tellAgent(
      AgentChannel channel, Instant expiresAt, boolean reattached) {
    return channel.call(
        Json.object()
            .put(Ops.OP, Ops.OP_SET_TTL)
            .put("expires_at", expiresAt.getEpochSecond())
            .put("extend_only", reattached),
        new byte[0],
        f -> {});
  }

  /**
   * Arms the expiry once the agent has taken it ({@code told}, from {@link #tellAgent}): the host
   * state and the reaper only after the agent answered, so a sandbox whose agent is gone leaves no
   * host state behind.
   */
  public void armAfter(CompletableFuture<Frame> told) {
    channel.await(told, ANSWER, Ops.OP_SET_TTL);
    recordState();
    armReaper();
  }

  /**
   * Like {@link #armAfter}, but leaves the host state to {@link #recordState}: a pooled hand-out
   * writes it a moment later, off the user's first calls (a file written and renamed, about a
   * millisecond here). Until then the host state has no entry for the sandbox, and 'prune' in
   * another process goes by its member labels: this process as owner, the member's expiry.
   */
  public void armInProcess(CompletableFuture<Frame> told) {
    channel.await(told, ANSWER, Ops.OP_SET_TTL);
    armReaper();
  }

  /**
   * Writes the current expiry to the host state; synchronized with {@link #extend}, so that an
   * expiry read before an extend never overwrites the extended one.
   */
  public synchronized void recordState() {
    HostState.write(new HostState.Entry(sandboxId, backend, owner, expiresAt));
  }

  private void armReaper() {
    if (owner.equals(SecurityPolicy.ownerId())) {
      ExpiryReaper.schedule(sandboxId, expire, expiresAt);
    } else {
      // Not ours: its owner, its agent and 'prune' end it; this handle's idea of the expiry may
      // be older than one set elsewhere, and must not destroy it early.
      ExpiryReaper.cancel(sandboxId);
    }
  }

  /** Moves the expiry {@code more} later and arms it. */
  public synchronized void extend(Duration more) {
    expiresAt = expiresAt.plus(more);
    arm(false);
  }

  /** The expiry starts again from now (a spare taken for a fork starts its life then). */
  public synchronized void restart(Duration ttl) {
    expiresAt = Instant.now().plus(ttl);
    arm(false);
  }

  /**
   * This process lets the sandbox go on running: the agent and 'prune' end it at its expiry, not
   * this process (whose idea of the expiry may be older than one set elsewhere).
   */
  public void detach() {
    ExpiryReaper.cancel(sandboxId);
    if (owner.equals(SecurityPolicy.ownerId())) {
      owner = HostState.DETACHED;
      recordState();
    }
  }

  /** The sandbox is gone: nothing is to fire for it any more. */
  public void cancel() {
    ExpiryReaper.cancel(sandboxId);
  }
}
