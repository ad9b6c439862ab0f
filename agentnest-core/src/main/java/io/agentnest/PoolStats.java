package io.agentnest;

/**
 * A pool's counts at one moment.
 *
 * @param idle started and waiting for a user
 * @param starting being started by the refill (or by an acquire that found none idle)
 * @param inUse handed out and not yet closed
 * @param acquired hand-outs so far
 * @param started sandboxes the pool started so far
 * @param failed starts or hand-outs that failed (the sandbox was destroyed)
 * @param replaced idle sandboxes destroyed because they died or waited past {@code idle_ttl}
 */
public record PoolStats(
    int idle, int starting, int inUse, long acquired, long started, long failed, long replaced) {
  /** Idle, starting and in use together: what {@code max_total} bounds. */
  public int total() {
    return idle + starting + inUse;
  }
}
