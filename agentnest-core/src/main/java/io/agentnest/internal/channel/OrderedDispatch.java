package io.agentnest.internal.channel;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one channel's tasks on a shared pool, one at a time and in the order given: the frames of a
 * call must reach its listener in the order the agent sent them.
 */
final class OrderedDispatch {
  private static final Logger LOG = LoggerFactory.getLogger(OrderedDispatch.class);
  // Tasks run before the pool thread is handed back, so one busy channel cannot keep it forever.
  private static final int BATCH = 64;

  private final Executor pool;
  private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
  private boolean running;

  OrderedDispatch(Executor pool) {
    this.pool = pool;
  }

  void submit(Runnable task) {
    synchronized (tasks) {
      tasks.add(task);
      if (running) {
        return;
      }
      running = true;
    }
    pool.execute(this::drain);
  }

  private void drain() {
    for (int i = 0; i < BATCH; i++) {
      Runnable next;
      synchronized (tasks) {
        next = tasks.poll();
        if (next == null) {
          running = false;
          return;
        }
      }
      try {
        next.run();
      } catch (RuntimeException e) {
        LOG.warn("sandbox channel task failed", e);
      }
    }
    pool.execute(this::drain);
  }
}
