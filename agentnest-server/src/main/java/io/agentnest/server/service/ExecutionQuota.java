package io.agentnest.server.service;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.tenancy.QuotaLedger;
import io.agentnest.server.tenancy.Tenant;
import java.time.Clock;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Executions (exec and code calls) a tenant may start in any sliding minute. A sliding window of
 * start times, not a token bucket, so the 429 can say exactly how many ran in the last minute; kept
 * in this server's memory, or in the shared store so that the servers of a deployment hold a tenant
 * to one window.
 */
final class ExecutionQuota {
  private static final long MINUTE = 60_000_000_000L;
  private static final int MAX_TENANTS = 10_000;

  private final LongSupplier nanos;
  private final Map<String, ArrayDeque<Long>> starts = new HashMap<>();
  private final Supplier<QuotaLedger> shared;
  private final Clock clock;

  /**
   * @param shared where the servers of a deployment count executions together; when it counts none,
   *     this server's own window decides
   */
  ExecutionQuota(LongSupplier nanos, Supplier<QuotaLedger> shared, Clock clock) {
    this.nanos = Objects.requireNonNull(nanos);
    this.shared = shared;
    this.clock = clock;
  }

  /** Counts one execution of {@code t}; a 429 naming the quota and its use when it is full. */
  void acquire(Tenant t) {
    int limit = t.executionsPerMinute();
    if (limit <= 0) {
      return; // 0: no limit on executions
    }
    QuotaLedger ledger = shared.get();
    if (ledger.sharesExecutions()) {
      QuotaLedger.Busy busy = ledger.startExecution(t, clock.instant());
      if (busy != null) {
        throw full(limit, busy.used(), busy.retrySeconds());
      }
      return;
    }
    acquireHere(t, limit);
  }

  private synchronized void acquireHere(Tenant t, int limit) {
    long now = nanos.getAsLong();
    if (starts.size() > MAX_TENANTS && !starts.containsKey(t.name())) {
      starts.clear(); // bounded memory whatever the number of tenants
    }
    // At most `limit` entries are ever kept: the window holds only accepted starts.
    ArrayDeque<Long> window = starts.computeIfAbsent(t.name(), k -> new ArrayDeque<>());
    while (!window.isEmpty() && now - window.peekFirst() >= MINUTE) {
      window.pollFirst();
    }
    if (window.size() >= limit) {
      long retry =
          Math.max(1, (MINUTE - (now - window.peekFirst()) + 999_999_999L) / 1_000_000_000L);
      throw full(limit, window.size(), retry);
    }
    window.addLast(now);
  }

  private static ApiException full(int limit, int used, long retrySeconds) {
    return new ApiException(
        429,
        ErrorCode.QUOTA,
        "quota 'executions_per_minute' is full: limit "
            + limit
            + ", "
            + used
            + " executions started in the last minute",
        "wait " + retrySeconds + " s, or raise the tenant's --executions-per-minute",
        Map.of("quota", "executions_per_minute", "limit", limit, "used", used));
  }

  /** Executions of {@code tenant} started in the last minute (on every server, when shared). */
  int used(String tenant) {
    QuotaLedger ledger = shared.get();
    return ledger.sharesExecutions()
        ? ledger.executionsUsed(tenant, clock.instant())
        : usedHere(tenant);
  }

  private synchronized int usedHere(String tenant) {
    ArrayDeque<Long> window = starts.get(tenant);
    if (window == null) {
      return 0;
    }
    long now = nanos.getAsLong();
    return (int) window.stream().filter(s -> now - s < MINUTE).count();
  }
}
