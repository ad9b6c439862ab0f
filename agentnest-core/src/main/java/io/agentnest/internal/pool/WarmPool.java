package io.agentnest.internal.pool;

import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.PoolExhaustedException;
import io.agentnest.PoolOptions;
import io.agentnest.PoolStats;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxPool;
import io.agentnest.spi.support.DaemonThreads;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pool's accounting over a {@link Members} source: members wait in {@code idle} (oldest first),
 * are being started ({@code starting}) or are handed out ({@code inUse}); the three together never
 * exceed {@code max_total}. One lock guards the counts, and a member leaves {@code idle} under it,
 * so no member is ever handed out twice. Starting and destroying members (slow) happen outside the
 * lock.
 */
public final class WarmPool<M> implements SandboxPool {
  private static final Logger LOG = LoggerFactory.getLogger(WarmPool.class);

  /** The longest pause of the refill after failed starts (a broken image, a full engine). */
  private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(30);

  /** How long close() waits for starts in flight, whose members it then destroys. */
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(60);

  private record Idle<M>(M member, long since) {}

  private final SandboxConfig template;
  private final PoolOptions options;
  private final PoolKey key;
  private final Members<M> members;
  private final LongSupplier nanos;
  private final Runnable onClose;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Deque<Idle<M>> idle = new ArrayDeque<>();
  private int starting;
  private int refilling;
  private int inUse;
  private boolean closed;
  private long acquired;
  private long started;
  private long failed;
  private long replaced;
  private int failureStreak;
  private long refillNotBefore;

  private final ExecutorService starter;
  private final @Nullable ScheduledExecutorService maintenance;

  /**
   * {@code scheduled}: a background task replaces dead and idle-expired members (tests call {@link
   * #maintain()} themselves); {@code onClose} runs once when the pool closes.
   */
  WarmPool(
      SandboxConfig template,
      PoolOptions options,
      Members<M> members,
      LongSupplier nanos,
      boolean scheduled,
      Runnable onClose) {
    this.template = template;
    this.options = options;
    this.key = PoolKey.of(template);
    this.members = members;
    this.nanos = nanos;
    this.onClose = onClose;
    this.starter = DaemonThreads.pool("agentnest-pool-" + options.name());
    if (scheduled) {
      long period =
          Math.max(200, Math.min(2000, options.idleTtl().toMillis() / 4)); // bounded wake-ups
      maintenance = DaemonThreads.scheduler("agentnest-pool-" + options.name() + "-check");
      maintenance.scheduleWithFixedDelay(
          this::maintainQuietly, period, period, TimeUnit.MILLISECONDS);
    } else {
      maintenance = null;
    }
    refill();
  }

  @Override
  public String name() {
    return options.name();
  }

  @Override
  public SandboxConfig template() {
    return template;
  }

  @Override
  public PoolOptions options() {
    return options;
  }

  /**
   * The configuration that matched last: a caller usually acquires with one configuration object
   * again and again (and {@code Sandbox.create} asks {@code matches} before {@code acquire}), and
   * its key is the whole policy's spec, a millisecond to make before the JIT has compiled it.
   * Configurations are immutable, so the same object matches again.
   */
  private volatile @Nullable SandboxConfig lastMatched;

  @Override
  public boolean matches(SandboxConfig config) {
    if (config == lastMatched) {
      return true;
    }
    boolean matches = PoolKey.of(config).equals(key);
    if (matches) {
      lastMatched = config;
    }
    return matches;
  }

  @Override
  public Sandbox acquire(SandboxConfig config) {
    if (!matches(config)) {
      throw new ConfigException(
          "this configuration shapes another sandbox than pool '"
              + name()
              + "' keeps (its image, backend, runtime, limits, network policy, tenant, labels,"
              + " user or security settings differ from the template): acquire with a matching"
              + " configuration, or create the sandbox without the pool");
    }
    members.precheck(config);
    long deadline = nanos.getAsLong() + options.maxWait().toNanos();
    int failures = 0;
    while (true) {
      Taken<M> taken = take(deadline);
      M member = taken.member();
      if (member == null) {
        refill();
        try {
          member = members.start();
        } catch (RuntimeException | Error e) {
          afterStart(false);
          throw e;
        }
        afterStart(true);
      }
      AtomicBoolean once = new AtomicBoolean();
      try {
        Sandbox sb;
        try {
          sb = members.handOut(member, config, () -> release(once));
        } finally {
          if (taken.member() != null) {
            refillAfterHandOut();
          }
        }
        lock.lock();
        try {
          acquired++;
        } finally {
          lock.unlock();
        }
        return sb;
      } catch (ConfigException e) {
        members.destroy(member);
        release(once);
        throw e; // the user's configuration: another member would refuse it too
      } catch (RuntimeException e) {
        members.destroy(member);
        release(once);
        lock.lock();
        try {
          failed++;
        } finally {
          lock.unlock();
        }
        if (++failures >= 3) {
          throw new AgentNestException(
              "pool '"
                  + name()
                  + "': "
                  + failures
                  + " sandboxes in a row failed at hand-out, the last with: "
                  + e.getMessage(),
              e);
        }
        LOG.warn("pool {}: a sandbox failed at hand-out, taking another: {}", name(), e.toString());
      }
    }
  }

  /** A member taken out of {@code idle}, or null when the caller is to start one itself. */
  private record Taken<M>(@Nullable M member) {}

  /** Takes an idle member, or reserves a start, or waits/fails as the options say. */
  private Taken<M> take(long deadline) {
    List<M> dead = new ArrayList<>();
    try {
      lock.lock();
      try {
        while (true) {
          if (closed) {
            throw new AgentNestException(
                "pool '" + name() + "' is closed: start a new one or create without a pool");
          }
          Idle<M> next;
          while ((next = idle.pollFirst()) != null) {
            if (members.alive(next.member())) {
              inUse++;
              return new Taken<>(next.member());
            }
            dead.add(next.member());
            replaced++;
          }
          if (total() < options.maxTotal()) {
            starting++; // the acquire starts one itself; in use once started (afterStart)
            return new Taken<>(null);
          }
          if (options.onExhausted() == PoolOptions.Exhaustion.FAIL) {
            throw exhausted("on_exhausted is fail");
          }
          long left = deadline - nanos.getAsLong();
          if (left <= 0) {
            throw exhausted("none came free within max_wait " + options.maxWait());
          }
          try {
            changed.awaitNanos(left);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AgentNestException("interrupted while waiting for pool '" + name() + "'", e);
          }
        }
      } finally {
        lock.unlock();
      }
    } finally {
      dead.forEach(members::destroy);
    }
  }

  private PoolExhaustedException exhausted(String why) {
    return new PoolExhaustedException(
        "pool '"
            + name()
            + "' has all of its max_total "
            + options.maxTotal()
            + " sandboxes handed out or starting ("
            + why
            + "): close sandboxes you no longer need, raise max_total, or set on_exhausted: wait"
            + " with a longer max_wait");
  }

  /** An acquire's own start ended: it moves from starting to in use, or frees its slot. */
  private void afterStart(boolean ok) {
    lock.lock();
    try {
      starting--;
      if (ok) {
        started++;
        inUse++;
      } else {
        failed++;
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** A handed-out sandbox was destroyed or detached: its slot is free. */
  private void release(AtomicBoolean once) {
    if (!once.compareAndSet(false, true)) {
      return;
    }
    lock.lock();
    try {
      inUse--;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    refill();
  }

  private int total() {
    return idle.size() + starting + inUse;
  }

  /** Starts members until {@code min_idle} wait or are starting, within the limits. */
  void refill() {
    int n;
    lock.lock();
    try {
      if (closed || nanos.getAsLong() < refillNotBefore) {
        return;
      }
      int need = options.minIdle() - idle.size() - (starting - startsByAcquire());
      n =
          Math.min(
              need,
              Math.min(options.maxTotal() - total(), options.refillConcurrency() - refilling));
      if (n <= 0) {
        return;
      }
      starting += n;
      refilling += n;
    } finally {
      lock.unlock();
    }
    for (int i = 0; i < n; i++) {
      starter.execute(this::refillOne);
    }
  }

  /**
   * How long after a hand-out its replacement starts. A container start takes a few hundred
   * milliseconds of the host's CPU (the engine's, runc's, the new agent's); on a small host,
   * started at once it ran alongside the hand-out and the user's first calls and doubled them
   * (`agentnest bench --only pool`: acquire + first result 18 ms at load 9 either way, split
   * differently); a quarter second later those calls are done. The pool is one member short for
   * that long.
   */
  static final long REFILL_DELAY_MS = 250;

  private void refillAfterHandOut() {
    ScheduledExecutorService m = maintenance;
    if (m == null) {
      refill();
      return;
    }
    try {
      m.schedule(this::refill, REFILL_DELAY_MS, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      // the pool is closing: nothing to refill
    }
  }

  /** Starts in flight that acquires reserved (they go to their acquirer, not to idle). */
  private int startsByAcquire() {
    return starting - refilling;
  }

  private void refillOne() {
    M member = null;
    RuntimeException failure = null;
    try {
      member = members.start();
    } catch (RuntimeException e) {
      failure = e;
    }
    boolean keep = false;
    lock.lock();
    try {
      starting--;
      refilling--;
      if (member == null) {
        failed++;
        failureStreak++;
        long backoff =
            Math.min(
                MAX_BACKOFF_NANOS,
                TimeUnit.MILLISECONDS.toNanos(250L << Math.min(failureStreak, 7)));
        refillNotBefore = nanos.getAsLong() + backoff;
      } else {
        started++;
        failureStreak = 0;
        keep = !closed && idle.size() < options.maxIdle();
        if (keep) {
          idle.addLast(new Idle<>(member, nanos.getAsLong()));
        }
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    if (failure != null) {
      LOG.warn("pool {}: starting a sandbox failed: {}", name(), failure.toString());
    }
    if (member != null && !keep) {
      members.destroy(member);
    }
    refill();
  }

  private void maintainQuietly() {
    try {
      maintain();
    } catch (RuntimeException e) {
      LOG.warn("pool {}: check failed: {}", name(), e.toString());
    }
  }

  /**
   * Replaces idle members that died or waited past {@code idle_ttl}, trims to {@code max_idle}, and
   * refills.
   */
  void maintain() {
    List<M> out = new ArrayList<>();
    lock.lock();
    try {
      long now = nanos.getAsLong();
      long ttl = options.idleTtl().toNanos();
      for (var it = idle.iterator(); it.hasNext(); ) {
        Idle<M> i = it.next();
        if (now - i.since() >= ttl || !members.alive(i.member())) {
          it.remove();
          out.add(i.member());
          replaced++;
        }
      }
      while (idle.size() > options.maxIdle()) {
        out.add(idle.pollLast().member());
      }
    } finally {
      lock.unlock();
    }
    out.forEach(members::destroy);
    refill();
  }

  @Override
  public PoolStats stats() {
    lock.lock();
    try {
      return new PoolStats(idle.size(), starting, inUse, acquired, started, failed, replaced);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close() {
    List<M> out = new ArrayList<>();
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      idle.forEach(i -> out.add(i.member()));
      idle.clear();
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    onClose.run();
    if (maintenance != null) {
      maintenance.shutdownNow();
    }
    out.forEach(members::destroy);
    // Starts in flight end by destroying their member (closed): wait, so none outlives close.
    starter.shutdown();
    try {
      if (!starter.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn("pool {}: starts still running after {}; prune removes them", name(), CLOSE_WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "SandboxPool[" + name() + ", " + stats() + "]";
  }
}
