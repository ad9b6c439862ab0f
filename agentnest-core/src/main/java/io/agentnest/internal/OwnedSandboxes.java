package io.agentnest.internal;

import io.agentnest.SandboxPool;
import io.agentnest.internal.pool.PoolRegistry;
import io.agentnest.spi.support.ExitHooks;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sandboxes this process owns: made or connected here and neither destroyed nor detached. When
 * the process exits (normally, by {@code System.exit} or by SIGTERM/SIGINT), one shutdown hook
 * destroys what is still owned and closes the running pools (their idle members), so that only a
 * SIGKILL leaves anything to the owner-pid label and {@code agentnest prune}. A process that hands
 * its sandboxes on at exit (a server whose successor adopts them) says so with {@link
 * #destroyOnExit(boolean)}.
 */
public final class OwnedSandboxes {
  private static final Logger LOG = LoggerFactory.getLogger(OwnedSandboxes.class);

  /** How long the exit waits for the destroys, in all: a hung engine must not hang the exit. */
  private static final long EXIT_BUDGET_SECONDS = 20;

  private static final Set<DefaultSandbox> LIVE = ConcurrentHashMap.newKeySet();
  private static final AtomicBoolean HOOKED = new AtomicBoolean();
  private static volatile boolean destroyOnExit = true;

  private OwnedSandboxes() {}

  static void add(DefaultSandbox sb) {
    if (HOOKED.compareAndSet(false, true)) {
      ExitHooks.add(ExitHooks.SANDBOXES, OwnedSandboxes::atExit);
    }
    LIVE.add(sb);
  }

  static void remove(DefaultSandbox sb) {
    LIVE.remove(sb);
  }

  /** Whether this process destroys what it still owns when it exits (default: yes). */
  public static void destroyOnExit(boolean on) {
    destroyOnExit = on;
  }

  /** How many sandboxes this process owns now. */
  public static int count() {
    return LIVE.size();
  }

  static void atExit() {
    if (!destroyOnExit) {
      return;
    }
    List<DefaultSandbox> owned = List.copyOf(LIVE);
    List<SandboxPool> pools = PoolRegistry.running();
    if (owned.isEmpty() && pools.isEmpty()) {
      return;
    }
    ExecutorService exec = Executors.newFixedThreadPool(Math.max(1, Math.min(8, owned.size())));
    for (DefaultSandbox sb : owned) {
      exec.execute(
          () -> {
            try {
              sb.destroyBecause("destroyed: the process that owned it exited");
            } catch (RuntimeException e) {
              LOG.warn("could not destroy sandbox {} at exit: {}", sb.id(), e.toString());
            }
          });
    }
    for (SandboxPool p : pools) {
      exec.execute(
          () -> {
            try {
              p.close();
            } catch (Exception e) {
              LOG.warn("could not close pool {} at exit: {}", p.name(), e.toString());
            }
          });
    }
    exec.shutdown();
    try {
      if (!exec.awaitTermination(EXIT_BUDGET_SECONDS, TimeUnit.SECONDS)) {
        LOG.warn(
            "{} sandbox(es) not destroyed within {} s of exit: `agentnest prune` removes them",
            LIVE.size(),
            EXIT_BUDGET_SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
