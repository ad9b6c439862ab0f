package io.agentnest.server.service;

import io.agentnest.ResourceUsage;
import io.agentnest.Sandbox;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The CPU and memory each sandbox uses, for the sandbox views: asking the engine takes about a
 * second, so a view never waits for it. A view gets the last figure (none at first) and, when that
 * is older than {@link #FRESH_MILLIS}, starts one refresh in the background; at most one refresh
 * per sandbox is under way, on {@link #THREADS} threads, so console refreshes never pile up calls
 * on the engine.
 */
public final class UsageCache implements AutoCloseable {
  static final long FRESH_MILLIS = 2_000;
  static final int THREADS = 2;

  private record Cached(@Nullable ResourceUsage usage, long at) {}

  private final Map<String, Cached> byId = new ConcurrentHashMap<>();
  private final Set<String> refreshing = ConcurrentHashMap.newKeySet();
  private final LongSupplier millis;
  private final ExecutorService pool =
      Executors.newFixedThreadPool(
          THREADS,
          r -> {
            Thread t = new Thread(r, "agentnest-server-usage");
            t.setDaemon(true);
            return t;
          });

  UsageCache(LongSupplier millis) {
    this.millis = millis;
  }

  /** The last figure for {@code sb} (empty until the first arrives); refreshes it when stale. */
  public Optional<ResourceUsage> get(Sandbox sb) {
    String id = sb.id();
    Cached c = byId.get(id);
    if ((c == null || millis.getAsLong() - c.at() > FRESH_MILLIS) && refreshing.add(id)) {
      try {
        pool.execute(
            () -> {
              try {
                byId.put(id, new Cached(sb.usage().orElse(null), millis.getAsLong()));
              } finally {
                refreshing.remove(id);
              }
            });
      } catch (RuntimeException shutDown) {
        refreshing.remove(id);
      }
    }
    return c == null ? Optional.empty() : Optional.ofNullable(c.usage());
  }

  /** Forgets sandboxes the registry no longer holds. */
  public void retain(Registry registry) {
    byId.keySet().removeIf(id -> !registry.contains(id));
  }

  @Override
  public void close() {
    pool.shutdownNow();
  }
}
