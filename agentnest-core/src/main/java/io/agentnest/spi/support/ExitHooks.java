package io.agentnest.spi.support;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Work a process does on its way out, in order. The JVM runs its shutdown hooks concurrently: the
 * sandboxes a process still owns must be destroyed (and audited) before the audit log closes, so
 * both go through this one hook, sandboxes first.
 */
public final class ExitHooks {
  /** Destroying what the process owns: writes audit records. */
  public static final int SANDBOXES = 0;

  /** Closing the audit log: last. */
  public static final int AUDIT = 1;

  private static final List<List<Runnable>> PHASES = List.of(new ArrayList<>(), new ArrayList<>());
  private static final AtomicBoolean HOOKED = new AtomicBoolean();

  private ExitHooks() {}

  /** Runs {@code task} at exit, after every task of an earlier phase. */
  public static void add(int phase, Runnable task) {
    synchronized (PHASES) {
      PHASES.get(phase).add(task);
    }
    if (HOOKED.compareAndSet(false, true)) {
      Runtime.getRuntime().addShutdownHook(new Thread(ExitHooks::run, "agentnest-exit"));
    }
  }

  private static void run() {
    List<List<Runnable>> phases;
    synchronized (PHASES) {
      phases = PHASES.stream().map(List::copyOf).toList();
    }
    for (List<Runnable> phase : phases) {
      for (Runnable task : phase) {
        try {
          task.run();
        } catch (RuntimeException e) {
          // One failing task must not keep the others (the audit log's close) from running.
          System.err.println("agentnest: an exit task failed: " + e);
        }
      }
    }
  }
}
