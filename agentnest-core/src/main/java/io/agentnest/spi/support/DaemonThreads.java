package io.agentnest.spi.support;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;

/**
 * Thread pools of daemon threads (an application that forgets to close a sandbox still exits) and
 * joining their results with the task's own exception.
 */
public final class DaemonThreads {
  private DaemonThreads() {}

  /** A cached pool whose threads are named {@code name}. */
  public static ExecutorService pool(String name) {
    return Executors.newCachedThreadPool(named(name));
  }

  /** One daemon thread for delayed tasks. */
  public static ScheduledExecutorService scheduler(String name) {
    return Executors.newSingleThreadScheduledExecutor(named(name));
  }

  /** The future's value; a task's runtime exception is rethrown as itself, not wrapped. */
  public static <T> T join(CompletableFuture<T> f) {
    try {
      return f.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw e;
    }
  }

  private static ThreadFactory named(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }
}
