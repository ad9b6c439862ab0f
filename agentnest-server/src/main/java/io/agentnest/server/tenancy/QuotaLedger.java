package io.agentnest.server.tenancy;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A tenant's quota use as every server of a deployment sees it. One server alone counts its own
 * sandboxes in memory and needs none of this ({@link #NONE}); servers sharing a store count each
 * sandbox (and each create under way) as a hold in the store, taken atomically against the tenant's
 * limits, so racing creates on different servers cannot overshoot a quota.
 */
public interface QuotaLedger {
  /** No shared count: the server's own is the whole truth (one server, SQLite). */
  QuotaLedger NONE =
      new QuotaLedger() {
        @Override
        public @Nullable Full hold(
            Tenant t, String holdId, long memoryBytes, double cpus, int extra, Instant expires) {
          return null;
        }

        @Override
        public void bind(String holdId, String sandboxId, Instant expires) {}

        @Override
        public void adopt(
            String tenant, String sandboxId, long memoryBytes, double cpus, Instant expires) {}

        @Override
        public void extend(String sandboxId, Instant expires) {}

        @Override
        public void release(String id) {}

        @Override
        public boolean sharesExecutions() {
          return false;
        }

        @Override
        public @Nullable Busy startExecution(Tenant t, Instant now) {
          return null;
        }

        @Override
        public int executionsUsed(String tenant, Instant now) {
          return 0;
        }

        @Override
        public @Nullable Use use(String tenant, Instant now) {
          return null;
        }
      };

  /**
   * A quota that is full: which one ({@code sandboxes}, {@code memory_bytes}, {@code cpus}), its
   * limit and its use across every server.
   */
  record Full(String quota, Object limit, Object used) {}

  /**
   * Takes room for one sandbox of {@code t} under {@code holdId} until {@code expires}, counting
   * {@code extra} sandboxes the tenant holds outside the store (E2B-paused ones); null when taken,
   * else the quota that is full (nothing is taken then).
   */
  @Nullable Full hold(
      Tenant t, String holdId, long memoryBytes, double cpus, int extra, Instant expires);

  /** The create under {@code holdId} made sandbox {@code sandboxId}, which lives until then. */
  void bind(String holdId, String sandboxId, Instant expires);

  /**
   * Counts a sandbox a server took over after a restart (counted even when it overshoots: it runs
   * already, and the tenant's next create waits for room).
   */
  void adopt(String tenant, String sandboxId, long memoryBytes, double cpus, Instant expires);

  /** The sandbox lives longer now. */
  void extend(String sandboxId, Instant expires);

  /** Gives back a hold or a sandbox's room (idempotent). */
  void release(String id);

  /**
   * A tenant's executions window that is full: the executions started in the minute before, and in
   * how many seconds the oldest of them leaves the window.
   */
  record Busy(int used, long retrySeconds) {}

  /** Whether executions are counted here (else each server counts its own, in memory). */
  boolean sharesExecutions();

  /**
   * Counts one execution of {@code t} at {@code now} against its {@code executionsPerMinute}, in a
   * sliding minute across every server; null when counted, else the full window (nothing counted).
   */
  @Nullable Busy startExecution(Tenant t, Instant now);

  /** Executions of {@code tenant} started in the minute before {@code now}, on every server. */
  int executionsUsed(String tenant, Instant now);

  /** What a tenant's live holds add up to, on every server. */
  record Use(int sandboxes, long memoryBytes, double cpus) {}

  /** The tenant's use at {@code now} on every server, or null when only this server counts. */
  @Nullable Use use(String tenant, Instant now);
}
