package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.AgentNestException;
import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.SandboxBudgets;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.audit.HostBudgets;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What issue 42 found while measuring: `agentnest bench` with no options failed and lost all. */
class BenchStepsTest {
  @Test
  void aFailingStepIsOneLineAndTheOtherStepsFiguresAreKept() {
    BenchSteps steps = new BenchSteps();
    steps.run("exec", s -> s.put("exec", new double[] {1, 2}));
    ExecResult dump =
        new ExecResult(
            1,
            "out\nmore out",
            "Traceback (most recent call last):\n  File x\nPermissionError: no",
            null,
            List.of(),
            new ExecError("PermissionError", "denied\nsecond line", "Traceback\n..."),
            Duration.ofMillis(3),
            null,
            false,
            false,
            Map.of());
    steps.run(
        "approvals",
        s -> {
          s.put("approvals hooked-session", new double[] {3});
          BenchSteps.check(dump, null);
        });
    steps.run("redaction", s -> s.put("redaction", new double[] {100}));

    assertThat(steps.samples())
        .as("what was measured before and after the failure is still reported")
        .containsOnlyKeys("exec", "approvals hooked-session", "redaction");
    assertThat(steps.failures())
        .containsExactly(
            "approvals: benchmark call returned an unexpected result: PermissionError: denied");

    ByteArrayOutputStream err = new ByteArrayOutputStream();
    boolean ok = steps.reportFailures(new PrintStream(err, true, StandardCharsets.UTF_8));
    String printed = err.toString(StandardCharsets.UTF_8);
    assertThat(ok).isFalse();
    assertThat(printed.lines()).hasSize(1);
    assertThat(printed).doesNotContain("ExecResult[").doesNotContain("Traceback");
  }

  @Test
  void aMultiLineOrHugeMessageIsCutToOneLine() {
    String reason =
        BenchSteps.oneLine(new AgentNestException("first\nsecond\nthird" + "x".repeat(10_000)));
    assertThat(reason).isEqualTo("first ...");
    assertThat(BenchSteps.oneLine(new AgentNestException("y".repeat(1000))))
        .hasSizeLessThan(310)
        .doesNotContain("\n");
    assertThat(BenchSteps.oneLine(new IllegalStateException())).isEqualTo("IllegalStateException");
  }

  /**
   * The default run asks 2 x (50 + 5) questions back to back: more than the default burst of 50,
   * which is what made `agentnest bench` fail. Its own sandbox's budget now holds them all (the
   * clock is frozen here, so only the burst counts).
   */
  @Test
  void theApprovalsBenchmarksQuestionsFitItsSandboxsBudget() {
    int questions = 2 * (50 + 5);
    assertThat(admitted(SandboxBudgets.defaults(), questions))
        .as("the default budget refuses the default run (the bug)")
        .isLessThan(questions);
    SandboxBudgets bench = BenchSteps.approvalsBudget(SandboxBudgets.defaults(), questions);
    assertThat(admitted(bench, questions)).isEqualTo(questions);
    assertThat(bench.asksPerCall()).isEqualTo(SandboxBudgets.defaults().asksPerCall());
    SandboxBudgets huge = BenchSteps.approvalsBudget(SandboxBudgets.defaults(), 1_000_000);
    assertThat(huge.askBurst()).as("stays within the budget's own bounds").isEqualTo(10_000);
  }

  private static int admitted(SandboxBudgets b, int questions) {
    HostBudgets hb = new HostBudgets(b, (type, data) -> {}, kind -> {}, () -> 0L);
    int n = 0;
    for (int i = 0; i < questions; i++) {
      if (hb.asks().take() == Budget.Decision.ADMIT) {
        n++;
      }
    }
    return n;
  }
}
