package io.agentnest.internal.call;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A call's deadline on a clock the test moves by hand. */
class CallClockTest {
  private static final long SECOND = Duration.ofSeconds(1).toNanos();

  private final AtomicLong now = new AtomicLong(1_000 * SECOND);
  private final long start = now.get();

  private CallClock clock(Duration timeout, Duration approvalTimeout) {
    return new CallClock(timeout, approvalTimeout, Duration.ofSeconds(10), now::get);
  }

  @Test
  void theDeadlineIsTheTimeoutPlusTheAnswerMargin() {
    CallClock c = clock(Duration.ofSeconds(5), Duration.ofSeconds(60));

    assertThat(c.deadlineNanos()).isEqualTo(start + 15 * SECOND);
    now.addAndGet(3 * SECOND);
    assertThat(c.elapsed()).isEqualTo(Duration.ofSeconds(3));
    assertThat(c.deadlineNanos()).isEqualTo(start + 15 * SECOND);
  }

  @Test
  void productionUsesTheTenSecondMargin() {
    assertThat(CallClock.ANSWER_MARGIN).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void anOpenQuestionHoldsTheDeadlineAtLeastItsOwnTimeoutAway() {
    CallClock c = clock(Duration.ofSeconds(5), Duration.ofSeconds(60));
    now.addAndGet(4 * SECOND);

    c.askStarted();
    now.addAndGet(30 * SECOND);

    // 34 s in, past the call's own 15 s, but a person is still deciding: 60 s + margin from now.
    assertThat(c.deadlineNanos()).isEqualTo(now.get() + 70 * SECOND);
  }

  @Test
  void theTimeAQuestionWaitedIsAddedToTheDeadline() {
    CallClock c = clock(Duration.ofSeconds(5), Duration.ofSeconds(60));
    now.addAndGet(SECOND);
    long t0 = c.askStarted();
    now.addAndGet(20 * SECOND);

    c.askEnded(t0);

    assertThat(c.deadlineNanos()).isEqualTo(start + 35 * SECOND);
  }

  @Test
  void twoQuestionsAtOnceEachAddTheirWait() {
    CallClock c = clock(Duration.ofSeconds(5), Duration.ofSeconds(60));
    long a = c.askStarted();
    now.addAndGet(2 * SECOND);
    long b = c.askStarted();
    now.addAndGet(3 * SECOND);
    c.askEnded(a);
    assertThat(c.deadlineNanos()).as("one still open").isEqualTo(now.get() + 70 * SECOND);

    c.askEnded(b);

    assertThat(c.deadlineNanos()).isEqualTo(start + 15 * SECOND + 5 * SECOND + 3 * SECOND);
  }
}
