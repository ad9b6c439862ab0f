package io.agentnest.internal.call;

import io.agentnest.internal.approval.AskClock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A call's deadline: its timeout plus the answer margin, stopped while the sandbox waits for an
 * approval (time a person takes does not count against the call).
 */
public final class CallClock implements AskClock {
  /** Time the agent gets beyond a call's own timeout to stop it (TERM, grace, KILL) and answer. */
  public static final Duration ANSWER_MARGIN = Duration.ofSeconds(10);

  private final LongSupplier nanos;
  private final long start;
  private final long budget;
  private final long askBudget;
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicLong paused = new AtomicLong();

  /** A clock with the standard answer margin, on the host's monotonic clock. */
  public CallClock(Duration timeout, Duration approvalTimeout) {
    this(timeout, approvalTimeout, ANSWER_MARGIN, System::nanoTime);
  }

  /** {@code nanos} is the time source (a test's own; {@code System::nanoTime} otherwise). */
  CallClock(Duration timeout, Duration approvalTimeout, Duration margin, LongSupplier nanos) {
    this.nanos = nanos;
    this.start = nanos.getAsLong();
    this.budget = timeout.plus(margin).toNanos();
    this.askBudget = approvalTimeout.plus(margin).toNanos();
  }

  /** Now, on this clock's time source. */
  long now() {
    return nanos.getAsLong();
  }

  /** Wall time since the request, by the host's clock. */
  Duration elapsed() {
    return Duration.ofNanos(now() - start);
  }

  /**
   * When the call is overdue: its budget plus the time approvals paused it; while a question is
   * open, never sooner than that question's own timeout (plus the margin) from now.
   */
  long deadlineNanos() {
    long d = start + budget + paused.get();
    return open.get() > 0 ? Math.max(d, now() + askBudget) : d;
  }

  @Override
  public long askStarted() {
    open.incrementAndGet();
    return now();
  }

  @Override
  public void askEnded(long t0) {
    paused.addAndGet(now() - t0);
    open.decrementAndGet();
  }
}
