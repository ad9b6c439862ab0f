package io.agentnest.internal.lifecycle;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Background work that nothing waits on for safety, but that should not compete for the CPU with
 * what runs right now: it starts after a delay, on an executor. It runs at most once: {@link #drop}
 * abandons it when it has not started (what it was for is going away), {@link #runNow} does it at
 * once on the caller's thread (someone needs it done); both wait, bounded, for a run already under
 * way, so that nothing it writes arrives after them.
 */
public final class DeferredTask {
  private final Runnable work;
  private final AtomicBoolean claimed = new AtomicBoolean();
  private final CompletableFuture<Void> done = new CompletableFuture<>();

  private DeferredTask(Runnable work) {
    this.work = work;
  }

  /** {@code work} on {@code executor} once {@code delay} has passed, unless claimed before. */
  public static DeferredTask schedule(Runnable work, Duration delay, Executor executor) {
    DeferredTask task = new DeferredTask(work);
    CompletableFuture.delayedExecutor(delay.toMillis(), TimeUnit.MILLISECONDS, executor)
        .execute(
            () -> {
              if (task.claimed.compareAndSet(false, true)) {
                task.run();
              }
            });
    return task;
  }

  /**
   * A failure is the work's to report: it only ends the run here (thrown on, it would reach the
   * executor's thread, whose default handler prints it again on stderr).
   */
  private void run() {
    try {
      work.run();
      done.complete(null);
    } catch (RuntimeException e) {
      done.completeExceptionally(e);
    } catch (Error e) {
      done.completeExceptionally(e);
      throw e;
    }
  }

  /** Does the work now unless it has begun; else waits at most {@code wait} for that run. */
  public void runNow(Duration wait) {
    if (claimed.compareAndSet(false, true)) {
      run();
      return;
    }
    await(wait);
  }

  /** Abandons the work if it has not begun; else waits at most {@code wait} for that run. */
  public void drop(Duration wait) {
    if (claimed.compareAndSet(false, true)) {
      done.complete(null);
      return;
    }
    await(wait);
  }

  private void await(Duration wait) {
    try {
      done.get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // reported by the work itself; whoever waits goes on all the same
    }
  }
}
