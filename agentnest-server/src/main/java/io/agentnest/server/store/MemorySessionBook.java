package io.agentnest.server.store;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/** One server's console sessions, in memory (gone when the server stops). */
public final class MemorySessionBook implements SessionBook {
  private final Map<String, Entry> byId = new ConcurrentHashMap<>();

  @Override
  public void put(Entry e, Duration idle, int max) {
    byId.values().removeIf(s -> s.seen().plus(idle).isBefore(e.created()));
    if (byId.size() >= max) {
      byId.values().stream()
          .min(Comparator.comparing(Entry::seen))
          .ifPresent(oldest -> byId.remove(oldest.id()));
    }
    byId.put(e.id(), e);
  }

  @Override
  public @Nullable Entry get(String id) {
    return byId.get(id);
  }

  @Override
  public void touch(String id, Instant seen) {
    byId.computeIfPresent(
        id,
        (k, e) -> new Entry(e.id(), e.tenant(), e.keyId(), e.role(), e.csrf(), e.created(), seen));
  }

  @Override
  public void remove(String id) {
    byId.remove(id);
  }
}
