package io.agentnest.server.e2b;

import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * E2B's {@code setTimeout} sooner than a sandbox's TTL: the server's TTL is only ever extended, so
 * an earlier end is a timer of this face, one per E2B sandbox, that ends it then.
 */
final class E2bDeadlines implements AutoCloseable {
  private final ScheduledExecutorService timers;
  private final Clock clock;
  private final Map<String, ScheduledFuture<?>> deadlines = new ConcurrentHashMap<>();

  E2bDeadlines(ScheduledExecutorService timers, Clock clock) {
    this.timers = timers;
    this.clock = clock;
  }

  /** Ends sandbox {@code id} with {@code end} in {@code delayMs}, replacing an earlier deadline. */
  void schedule(String id, long delayMs, Runnable end) {
    cancel(id);
    deadlines.put(
        id,
        timers.schedule(
            () -> {
              deadlines.remove(id);
              end.run();
            },
            delayMs,
            TimeUnit.MILLISECONDS));
  }

  void cancel(String id) {
    ScheduledFuture<?> f = deadlines.remove(id);
    if (f != null) {
      f.cancel(false);
    }
  }

  /** When sandbox {@code id} ends: its deadline, or its TTL {@code expiresAt} if that is sooner. */
  Instant endAt(String id, Instant expiresAt) {
    ScheduledFuture<?> f = deadlines.get(id);
    if (f != null) {
      Instant sooner = clock.instant().plusMillis(f.getDelay(TimeUnit.MILLISECONDS));
      if (sooner.isBefore(expiresAt)) {
        return sooner;
      }
    }
    return expiresAt;
  }

  @Override
  public void close() {
    deadlines.values().forEach(f -> f.cancel(false));
    deadlines.clear();
  }
}
