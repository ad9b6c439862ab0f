package io.agentnest.internal.call;

import io.agentnest.AgentNestException;
import io.agentnest.Backpressure;
import io.agentnest.ExecEvent;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A bounded event queue between the sandbox's channel thread (producer) and one consumer (a Flow
 * subscriber served on a shared executor, or a blocking iterator). No thread per stream.
 */
public final class DefaultExecution implements Execution, Consumer<ExecEvent> {
  static final Executor DELIVERY = ForkJoinPool.commonPool();

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition notFull = lock.newCondition();
  private final Condition notEmpty = lock.newCondition();
  private final ArrayDeque<ExecEvent> queue = new ArrayDeque<>();
  private final int capacity;
  private final Backpressure policy;
  private final CompletableFuture<ExecResult> result = new CompletableFuture<>();
  private final CompletableFuture<ExecResult> userResult;
  private Runnable canceller = () -> {};

  /** The channel call this execution is, once it started (an approval may delay that); else -1. */
  private volatile long callId = -1;

  private long dropped;
  private boolean finished;
  private @Nullable Throwable failure;
  private boolean abandoned;
  private boolean consumed;
  private Flow.@Nullable Subscriber<? super ExecEvent> subscriber;
  private long demand;
  private boolean draining;
  private boolean terminated;

  public DefaultExecution(int capacity, Backpressure policy) {
    this.capacity = capacity;
    this.policy = policy;
    // User callbacks must not run on the channel thread.
    this.userResult = result.thenApplyAsync(r -> r, DELIVERY);
    this.userResult.whenComplete(
        (r, ex) -> {
          if (userResult.isCancelled()) {
            cancel();
          }
        });
  }

  public void onCancel(Runnable canceller) {
    this.canceller = canceller;
  }

  void started(long id) {
    callId = id;
  }

  /** The call id on the channel once the call started, else -1 (frames naming it as target). */
  public long callId() {
    return callId;
  }

  @Override
  public CompletableFuture<ExecResult> result() {
    return userResult;
  }

  @Override
  public void cancel() {
    canceller.run();
  }

  /** Producer side: called on the channel thread for every event. */
  @Override
  public void accept(ExecEvent event) {
    lock.lock();
    try {
      if (abandoned || finished) {
        return;
      }
      if (!(event instanceof ExecEvent.Finished)) {
        while (queue.size() >= capacity && policy == Backpressure.BLOCK && !abandoned) {
          notFull.awaitUninterruptibly();
        }
        if (abandoned) {
          return;
        }
        if (queue.size() >= capacity) {
          if (event instanceof ExecEvent.Output o) {
            dropped += o.chunk().data().length;
            return;
          }
        }
      }
      if (dropped > 0) {
        queue.add(new ExecEvent.Dropped(dropped));
        dropped = 0;
      }
      queue.add(event);
      if (event instanceof ExecEvent.Finished f) {
        finished = true;
        result.complete(f.result());
      }
      notEmpty.signalAll();
    } finally {
      lock.unlock();
    }
    scheduleDrain();
  }

  public void fail(Throwable t) {
    lock.lock();
    try {
      if (finished) {
        return;
      }
      finished = true;
      failure = t;
      notEmpty.signalAll();
    } finally {
      lock.unlock();
    }
    result.completeExceptionally(t);
    scheduleDrain();
  }

  // ---------------------------------------------------------------- Flow.Publisher

  @Override
  public void subscribe(Flow.Subscriber<? super ExecEvent> s) {
    lock.lock();
    boolean already = consumed;
    consumed = true;
    if (!already) {
      subscriber = s;
    }
    lock.unlock();
    if (already) {
      s.onSubscribe(
          new Flow.Subscription() {
            @Override
            public void request(long n) {}

            @Override
            public void cancel() {}
          });
      s.onError(new IllegalStateException("an Execution can be consumed once"));
      return;
    }
    s.onSubscribe(
        new Flow.Subscription() {
          @Override
          public void request(long n) {
            if (n <= 0) {
              abandon();
              s.onError(new IllegalArgumentException("request(" + n + "): demand must be > 0"));
              return;
            }
            lock.lock();
            try {
              demand = demand + n < 0 ? Long.MAX_VALUE : demand + n;
            } finally {
              lock.unlock();
            }
            scheduleDrain();
          }

          @Override
          public void cancel() {
            abandon();
          }
        });
  }

  private void abandon() {
    lock.lock();
    try {
      abandoned = true;
      terminated = true;
      queue.clear();
      notFull.signalAll();
      notEmpty.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void scheduleDrain() {
    lock.lock();
    try {
      if (subscriber == null || draining || terminated) {
        return;
      }
      draining = true;
    } finally {
      lock.unlock();
    }
    DELIVERY.execute(this::drain);
  }

  private void drain() {
    Flow.Subscriber<? super ExecEvent> s = subscriber;
    while (s != null) {
      ExecEvent next = null;
      Throwable error = null;
      lock.lock();
      try {
        if (terminated) {
          draining = false;
          return;
        }
        if (demand > 0 && !queue.isEmpty()) {
          next = queue.poll();
          demand--;
          notFull.signalAll();
        } else if (queue.isEmpty() && failure != null) {
          error = failure;
          terminated = true;
        } else {
          draining = false;
          return;
        }
      } finally {
        lock.unlock();
      }
      if (error != null) {
        s.onError(error);
        return;
      }
      try {
        s.onNext(next);
      } catch (RuntimeException e) {
        abandon();
        s.onError(e);
        return;
      }
      if (next instanceof ExecEvent.Finished) {
        lock.lock();
        terminated = true;
        lock.unlock();
        s.onComplete();
        return;
      }
    }
  }

  // ---------------------------------------------------------------- Iterator

  @Override
  public Iterator<ExecEvent> iterator() {
    lock.lock();
    try {
      if (consumed) {
        throw new IllegalStateException("an Execution can be consumed once");
      }
      consumed = true;
    } finally {
      lock.unlock();
    }
    return new Iterator<>() {
      private boolean done;

      @Override
      public boolean hasNext() {
        if (done) {
          return false;
        }
        lock.lock();
        try {
          while (queue.isEmpty() && failure == null && !abandoned) {
            notEmpty.awaitUninterruptibly();
          }
          if (queue.isEmpty() && failure != null) {
            Throwable f = failure;
            done = true;
            if (f instanceof AgentNestException ane) {
              throw ane;
            }
            throw new AgentNestException("execution failed: " + f, f);
          }
          return !queue.isEmpty();
        } finally {
          lock.unlock();
        }
      }

      @Override
      public ExecEvent next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        lock.lock();
        try {
          ExecEvent e = queue.poll();
          notFull.signalAll();
          if (e instanceof ExecEvent.Finished) {
            done = true;
          }
          if (e == null) {
            throw new NoSuchElementException();
          }
          return e;
        } finally {
          lock.unlock();
        }
      }
    };
  }
}
