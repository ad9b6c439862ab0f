package io.agentnest.internal.audit;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ConfigException;
import io.agentnest.SandboxBudgets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;

/** The token bucket behind the sandbox budgets, on a clock the test moves. */
class BudgetTest {
  private final AtomicLong now = new AtomicLong();
  private final List<Map<String, Object>> records = new ArrayList<>();

  private Budget budget(double perSecond, int burst, int destroyAfter) {
    return new Budget(
        Budget.Kind.EGRESS_TUNNELS,
        perSecond,
        burst,
        destroyAfter,
        (t, d) -> records.add(Map.<String, Object>copyOf(d)),
        now::get);
  }

  private static final long SECOND = 1_000_000_000L;

  @Test
  void aBurstThenTheSteadyRate() {
    Budget b = budget(2, 5, 0);
    for (int i = 0; i < 5; i++) {
      assertThat(b.take()).isEqualTo(Budget.Decision.ADMIT);
    }
    assertThat(b.take()).isEqualTo(Budget.Decision.REFUSE);
    now.addAndGet(SECOND / 2);
    assertThat(b.take()).isEqualTo(Budget.Decision.ADMIT);
    assertThat(b.take()).isEqualTo(Budget.Decision.REFUSE);
  }

  @Test
  void aStreakIsReportedOnceAndItsCountWhenTheBucketIsFullAgain() {
    Budget b = budget(10, 3, 0);
    for (int i = 0; i < 103; i++) {
      b.take();
    }
    assertThat(records).hasSize(1);
    assertThat(records.get(0))
        .containsEntry("limit", "EGRESS_TUNNELS")
        .containsEntry("action", "refused")
        .containsEntry("budget", "10 egress connections/s after a burst of 3");
    now.addAndGet(SECOND); // quiet long enough to fill the bucket
    assertThat(b.take()).isEqualTo(Budget.Decision.ADMIT);
    assertThat(records).hasSize(2);
    assertThat(records.get(1))
        .containsEntry("action", "streak ended")
        .containsEntry("refused", 100L);
    assertThat(b.refusedTotal()).isEqualTo(100);
  }

  @Test
  void aStreakReachingTheDestroyCountAsksOnceForTheSandboxToGo() {
    Budget b = budget(1, 1, 10);
    b.take();
    List<Budget.Decision> ds = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      ds.add(b.take());
    }
    assertThat(ds.stream().filter(d -> d == Budget.Decision.DESTROY)).hasSize(1);
    assertThat(ds.indexOf(Budget.Decision.DESTROY)).isEqualTo(9);
    assertThat(records).extracting(r -> r.get("action")).containsExactly("refused", "destroyed");
  }

  @Test
  void zeroNeverDestroys() {
    Budget b = budget(1, 1, 0);
    for (int i = 0; i < 10_000; i++) {
      assertThat(b.take()).isNotEqualTo(Budget.Decision.DESTROY);
    }
  }

  @Test
  void invalidBudgetsNameTheKeyAndAValue() {
    Assertions.assertThatThrownBy(() -> SandboxBudgets.defaults().withTunnelBurst(0))
        .isInstanceOf(ConfigException.class)
        .hasMessage("budgets.tunnel_burst must be from 1 to 100000, got 0: e.g. 200");
    Assertions.assertThatThrownBy(() -> SandboxBudgets.defaults().withAsksPerSecond(Double.NaN))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("budgets.asks_per_second must be in (0, 1000]");
  }

  /**
   * However the takes are spread in time, no more pass than the burst plus what the rate refills.
   */
  @Property(tries = 300)
  void admittedNeverExceedsBurstPlusRefill(
      @ForAll @IntRange(min = 1, max = 50) int perSecond,
      @ForAll @IntRange(min = 1, max = 100) int burst,
      @ForAll @Size(max = 300) List<@IntRange(min = 0, max = 200) Integer> gapsMillis) {
    AtomicLong clock = new AtomicLong();
    List<Map<String, Object>> out = new ArrayList<>();
    Budget b =
        new Budget(
            Budget.Kind.APPROVAL_ASKS,
            perSecond,
            burst,
            0,
            (t, d) -> out.add(Map.<String, Object>copyOf(d)),
            clock::get);
    long admitted = 0;
    for (int gap : gapsMillis) {
      clock.addAndGet(gap * 1_000_000L);
      if (b.take() == Budget.Decision.ADMIT) {
        admitted++;
      }
    }
    double elapsed = clock.get() / 1e9;
    assertThat(admitted).isLessThanOrEqualTo(burst + (long) Math.ceil(elapsed * perSecond));
    // Each streak costs at most two records: its start and its count.
    assertThat(out.size()).isLessThanOrEqualTo(2 * (int) Math.max(1, admitted) + 2);
  }
}
