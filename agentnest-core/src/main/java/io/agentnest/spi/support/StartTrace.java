package io.agentnest.spi.support;

import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Where a sandbox's start spends its time, step by step ({@code agentnest bench --only cold-start
 * --trace}). A trace is begun on the thread that creates the sandbox; the launcher and the backend
 * {@link #mark} the end of each step on that thread, and nothing is recorded when no trace is
 * running there (a mark is then one thread-local read).
 */
public final class StartTrace {
  /** One step: its name and how long it took, in milliseconds. */
  public record Step(String name, double millis) {}

  private static final ThreadLocal<@Nullable StartTrace> CURRENT = new ThreadLocal<>();

  private final List<Step> steps = new ArrayList<>();
  private long last = System.nanoTime();

  private StartTrace() {}

  /** Starts tracing this thread; {@link #end} stops it and returns the steps. */
  public static StartTrace begin() {
    StartTrace t = new StartTrace();
    CURRENT.set(t);
    return t;
  }

  /**
   * Ends the step {@code name}: the time since the previous mark (or {@link #begin}) is recorded
   * under it. Does nothing when this thread has no trace running.
   */
  public static void mark(String name) {
    StartTrace t = CURRENT.get();
    if (t != null) {
      long now = System.nanoTime();
      t.steps.add(new Step(name, (now - t.last) / 1e6));
      t.last = now;
    }
  }

  /** Stops tracing this thread and returns the steps in order. */
  public List<Step> end() {
    if (CURRENT.get() == this) {
      CURRENT.remove();
    }
    return List.copyOf(steps);
  }
}
