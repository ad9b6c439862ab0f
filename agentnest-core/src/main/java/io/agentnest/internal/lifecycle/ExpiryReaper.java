package io.agentnest.internal.lifecycle;

import io.agentnest.spi.support.DaemonThreads;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Destroys this process's sandboxes when their TTL runs out. One daemon thread per JVM. */
public final class ExpiryReaper {
  private static final Logger LOG = LoggerFactory.getLogger(ExpiryReaper.class);
  private static final ScheduledExecutorService EXEC =
      DaemonThreads.scheduler("agentnest-expiry-reaper");
  private static final Map<String, ScheduledFuture<?>> TASKS = new ConcurrentHashMap<>();

  private ExpiryReaper() {}

  /** Runs {@code expire} (which destroys sandbox {@code id}) at {@code expiresAt}. */
  public static void schedule(String id, Runnable expire, Instant expiresAt) {
    long delay = Math.max(0, Duration.between(Instant.now(), expiresAt).toMillis());
    ScheduledFuture<?> f =
        EXEC.schedule(
            () -> {
              TASKS.remove(id);
              LOG.info("sandbox {} reached its TTL; destroying it", id);
              try {
                expire.run();
              } catch (RuntimeException e) {
                LOG.warn("could not destroy expired sandbox {}: {}", id, e.toString());
              }
            },
            delay,
            TimeUnit.MILLISECONDS);
    ScheduledFuture<?> old = TASKS.put(id, f);
    if (old != null) {
      old.cancel(false);
    }
  }

  /** Whether this process's reaper will end sandbox {@code id}. */
  static boolean isScheduled(String id) {
    return TASKS.containsKey(id);
  }

  public static void cancel(String id) {
    ScheduledFuture<?> f = TASKS.remove(id);
    if (f != null) {
      f.cancel(false);
    }
  }
}
