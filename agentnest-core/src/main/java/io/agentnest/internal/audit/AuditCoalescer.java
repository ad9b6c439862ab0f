package io.agentnest.internal.audit;

import io.agentnest.spi.support.DaemonThreads;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Writes a sandbox's audit records, folding repeated identical denials into one record with a
 * count: a sandbox hammering at a refused destination (or a refused operation) costs two records
 * per window, not one per attempt. The first denial of a kind is written at once; identical ones
 * within {@link #WINDOW} are counted, and the count goes out as a copy of the record with {@code
 * repeated}, {@code first_repeat} and {@code last_repeat} when the window ends (or the sandbox is
 * closed). Everything else passes straight through.
 *
 * <p>"Identical" ignores what varies between otherwise equal attempts (durations, byte counts,
 * waits). At most {@link #MAX_KEYS} kinds are folded at once; beyond that records pass through (the
 * sandbox's budgets bound how many there can be).
 */
final class AuditCoalescer {
  static final Duration WINDOW = Duration.ofSeconds(60);
  static final int MAX_KEYS = 256;
  private static final Set<String> VARYING =
      Set.of("duration_ms", "waited_ms", "bytes_up", "bytes_down");
  private static final ScheduledExecutorService FLUSHER =
      DaemonThreads.scheduler("agentnest-audit-coalesce");

  private final Budget.Recorder out;
  private final Supplier<Instant> clock;
  private final boolean scheduled;
  private final Map<String, Folded> folded = new LinkedHashMap<>();
  private boolean closed;

  private static final class Folded {
    final String type;
    final Map<String, ?> data;
    final Instant opened;
    long repeated;
    Instant firstRepeat = Instant.EPOCH;
    Instant lastRepeat = Instant.EPOCH;

    Folded(String type, Map<String, ?> data, Instant opened) {
      this.type = type;
      this.data = data;
      this.opened = opened;
    }
  }

  /** Folds for {@code out}; windows close on a shared scheduler. */
  AuditCoalescer(Budget.Recorder out) {
    this(out, Instant::now, true);
  }

  /** For tests: windows close only on {@link #flushExpired()} and {@link #close()}. */
  AuditCoalescer(Budget.Recorder out, Supplier<Instant> clock, boolean scheduled) {
    this.out = out;
    this.clock = clock;
    this.scheduled = scheduled;
  }

  /** Whether a record of this type is a denial that may be folded. */
  static boolean isDenial(String type, Map<String, ?> data) {
    return type.equals("policy.violation")
        || (type.equals("network.attempt") && "DENIED".equals(data.get("decision")));
  }

  void record(String type, Map<String, ?> data) {
    if (!isDenial(type, data)) {
      out.record(type, data);
      return;
    }
    String key = key(type, data);
    Instant now = clock.get();
    Folded expired = null;
    boolean write;
    boolean schedule = false;
    synchronized (this) {
      Folded f = folded.get(key);
      if (f != null && !now.isBefore(f.opened.plus(WINDOW))) {
        expired = folded.remove(key);
        f = null;
      }
      if (f != null && !closed) {
        if (f.repeated++ == 0) {
          f.firstRepeat = now;
          schedule = scheduled;
        }
        f.lastRepeat = now;
        write = false;
      } else {
        write = true;
        if (!closed && folded.size() < MAX_KEYS) {
          folded.put(key, new Folded(type, data, now));
        }
      }
    }
    if (expired != null) {
      summary(expired);
    }
    if (write) {
      out.record(type, data);
    }
    if (schedule) {
      FLUSHER.schedule(this::flushExpired, WINDOW.toMillis() + 100, TimeUnit.MILLISECONDS);
    }
  }

  /** Writes the counts of windows that have ended. */
  void flushExpired() {
    Instant now = clock.get();
    List<Folded> done = new ArrayList<>();
    synchronized (this) {
      var it = folded.values().iterator();
      while (it.hasNext()) {
        Folded f = it.next();
        if (!now.isBefore(f.opened.plus(WINDOW))) {
          it.remove();
          done.add(f);
        }
      }
    }
    done.forEach(this::summary);
  }

  /** Writes every count still open; later records pass straight through. */
  void close() {
    List<Folded> done;
    synchronized (this) {
      closed = true;
      done = new ArrayList<>(folded.values());
      folded.clear();
    }
    done.forEach(this::summary);
  }

  private void summary(Folded f) {
    if (f.repeated == 0) {
      return;
    }
    Map<String, Object> m = new LinkedHashMap<>(f.data);
    m.put("repeated", f.repeated);
    m.put("first_repeat", f.firstRepeat.toString());
    m.put("last_repeat", f.lastRepeat.toString());
    out.record(f.type, m);
  }

  private static String key(String type, Map<String, ?> data) {
    Map<String, Object> stable = new TreeMap<>();
    data.forEach(
        (k, v) -> {
          if (!VARYING.contains(k)) {
            stable.put(k, v);
          }
        });
    return type + '\u0000' + stable;
  }
}
