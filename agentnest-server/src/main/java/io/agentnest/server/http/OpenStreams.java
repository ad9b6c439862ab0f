package io.agentnest.server.http;

import io.agentnest.spi.support.DaemonThreads;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The streams open with a key (a WebSocket execution, a server-sent execution), cut when that key
 * stops being active (issue 42, item 5): checking the key only on each request left a stream opened
 * before `agentnest tenant revoke` running for as long as its execution did. Every {@link
 * #CHECK_MILLIS} the keys of the open streams are looked up (from the store's row cache, which a
 * revocation by this process clears at once and by another within 100 ms); a stream whose key is
 * revoked, expired or whose tenant is gone has its execution stopped and its connection closed.
 */
public final class OpenStreams implements AutoCloseable {
  /** How often the open streams' keys are checked. */
  public static final long CHECK_MILLIS = 250;

  private record Open(String keyId, Runnable cut) {}

  private final Predicate<String> keyActive;
  private final Map<Long, Open> open = new ConcurrentHashMap<>();
  private final AtomicLong seq = new AtomicLong();
  private final ScheduledExecutorService timer = DaemonThreads.scheduler("agentnest-stream-keys");

  public OpenStreams(Predicate<String> keyActive) {
    this.keyActive = keyActive;
    timer.scheduleWithFixedDelay(this::check, CHECK_MILLIS, CHECK_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** Something to end when the stream ends: it is no longer watched. */
  public interface Watch extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * Watches a stream opened with key {@code keyId}: {@code cut} runs (once, on the checker's
   * thread) when the key stops being active. Without a key id (a request no key authenticated)
   * there is nothing to watch.
   */
  public Watch watch(@Nullable String keyId, Runnable cut) {
    if (keyId == null) {
      return () -> {};
    }
    long id = seq.incrementAndGet();
    open.put(id, new Open(keyId, cut));
    return () -> open.remove(id);
  }

  /** Streams watched now (for tests and the shutdown). */
  int size() {
    return open.size();
  }

  void check() {
    Map<String, Boolean> active = new HashMap<>();
    for (Map.Entry<Long, Open> e : open.entrySet()) {
      Open o = e.getValue();
      try {
        if (!active.computeIfAbsent(o.keyId(), keyActive::test)
            && open.remove(e.getKey()) != null) {
          o.cut().run();
        }
      } catch (RuntimeException ignored) {
        // A failed look-up or cut must not end the checker (a scheduled task that throws is not
        // run again): the next round tries again.
      }
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
