package io.agentnest.internal.audit;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * A token bucket for one kind of host work a sandbox can cause (see {@link
 * io.agentnest.SandboxBudgets}), with what the host does past it: the first refusal of a streak is
 * reported once, the streak's count when it ends, and a streak that reaches {@code destroyAfter}
 * refusals asks for the sandbox to be destroyed. A streak ends when the bucket has filled up again:
 * the sandbox was quiet for a whole burst's worth of time.
 *
 * <p>Thread-safe; the clock is injectable so that tests need no sleeping.
 */
public final class Budget {
  /** What a budget covers; the name is the {@code limit} in its {@code limit.hit} records. */
  public enum Kind {
    EGRESS_TUNNELS("egress connections"),
    APPROVAL_ASKS("approval questions");

    public final String what;

    Kind(String what) {
      this.what = what;
    }
  }

  /** What the caller must do with one unit of work. */
  public enum Decision {
    ADMIT,
    REFUSE,
    /** Refuse, and destroy the sandbox: it kept pressing past its budget. Returned once. */
    DESTROY
  }

  /** Where a budget's records go (type, data), e.g. the sandbox's audit. */
  public interface Recorder {
    void record(String type, Map<String, ?> data);
  }

  private final Kind kind;
  private final double perNano;
  private final double burst;
  private final double perSecond;
  private final long destroyAfter;
  private final Recorder recorder;
  private final LongSupplier nanos;

  private double tokens;
  private long last;
  private long refused; // in the current streak
  private long refusedTotal;
  private boolean destroyAsked;

  Budget(
      Kind kind,
      double perSecond,
      int burst,
      int destroyAfter,
      Recorder recorder,
      LongSupplier nanos) {
    this.kind = kind;
    this.perSecond = perSecond;
    this.perNano = perSecond / 1e9;
    this.burst = burst;
    this.destroyAfter = destroyAfter;
    this.recorder = recorder;
    this.nanos = nanos;
    this.tokens = burst;
    this.last = nanos.getAsLong();
  }

  /** Takes one token if there is one; what to do otherwise. */
  public Decision take() {
    Map<String, Object> ended = null;
    Map<String, Object> report = null;
    Decision d;
    synchronized (this) {
      long now = nanos.getAsLong();
      tokens = Math.min(burst, tokens + Math.max(0, now - last) * perNano);
      last = now;
      if (tokens >= burst && refused > 0) {
        ended = streakEnded();
      }
      if (tokens >= 1) {
        tokens -= 1;
        d = Decision.ADMIT;
      } else {
        refused++;
        refusedTotal++;
        if (refused == 1) {
          report = data("refused", 1);
          report.put("action", "refused");
        }
        if (destroyAfter > 0 && refused >= destroyAfter && !destroyAsked) {
          destroyAsked = true;
          report = data("refused", refused);
          report.put("action", "destroyed");
          d = Decision.DESTROY;
        } else {
          d = Decision.REFUSE;
        }
      }
    }
    // Outside the lock: recording may block on the audit's backpressure.
    if (ended != null) {
      recorder.record("limit.hit", ended);
    }
    if (report != null) {
      recorder.record("limit.hit", report);
    }
    return d;
  }

  /** Records the count of a streak still open (when the sandbox goes away). */
  void close() {
    Map<String, Object> ended = null;
    synchronized (this) {
      if (refused > 0 && !destroyAsked) {
        ended = streakEnded();
      }
    }
    if (ended != null) {
      recorder.record("limit.hit", ended);
    }
  }

  synchronized long refusedTotal() {
    return refusedTotal;
  }

  private Map<String, Object> streakEnded() {
    Map<String, Object> m = data("refused", refused);
    m.put("action", "streak ended");
    refused = 0;
    return m;
  }

  private Map<String, Object> data(String key, long count) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("limit", kind.name());
    m.put("budget", describe());
    m.put(key, count);
    return m;
  }

  /** "20 egress connections/s after a burst of 200". */
  public String describe() {
    String rate =
        perSecond == Math.rint(perSecond)
            ? Long.toString((long) perSecond)
            : Double.toString(perSecond);
    return rate + " " + kind.what + "/s after a burst of " + (long) burst;
  }
}
