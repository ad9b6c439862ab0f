package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.SandboxBudgets;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import me.tongfei.progressbar.ProgressBar;
import org.jspecify.annotations.Nullable;

/**
 * The steps of one {@code agentnest bench} run: each adds its rows to the shared samples, and one
 * that fails is reported in one line while the rows already measured (its own earlier ones and
 * every other step's) are still printed. A benchmark that throws its figures away because a later
 * step failed has measured nothing.
 */
final class BenchSteps {
  private static final int MAX_REASON = 300;

  private final Map<String, double[]> samples = new LinkedHashMap<>();
  private final List<String> failures = new ArrayList<>();
  private int exit = ExitCodes.OK;

  /** Runs {@code step}; a failure is kept as one line naming the step. */
  void run(String step, Consumer<Map<String, double[]>> body) {
    try {
      body.accept(samples);
    } catch (RuntimeException e) {
      failures.add(step + ": " + oneLine(e));
      if (exit == ExitCodes.OK) {
        exit = ExitCodes.of(e); // the first failure's code: a missing image is 4, as README says
      }
    }
  }

  /** The exit code: 0, or the code of the first failed step's failure. */
  int exitCode() {
    return exit;
  }

  Map<String, double[]> samples() {
    return samples;
  }

  List<String> failures() {
    return List.copyOf(failures);
  }

  /** Prints one line per failed step on {@code err}; true when every step passed. */
  boolean reportFailures(PrintStream err) {
    for (String f : failures) {
      err.println("bench step failed: " + f);
    }
    return failures.isEmpty();
  }

  /** The first line of the message (or the exception's kind), cut to a readable length. */
  static String oneLine(Throwable e) {
    String m = e.getMessage();
    if (m == null || m.isBlank()) {
      m = e.getClass().getSimpleName();
    }
    String line = m.strip().lines().findFirst().orElse("").strip();
    boolean cut = line.length() > MAX_REASON || m.strip().lines().count() > 1;
    if (line.length() > MAX_REASON) {
      line = line.substring(0, MAX_REASON);
    }
    return cut ? line + " ..." : line;
  }

  /** A call's unexpected outcome in one line: the error, the exit code or the result. */
  static String describe(ExecResult r, @Nullable String expected) {
    ExecError error = r.error();
    if (error != null) {
      return error.name() + ": " + firstLine(error.value());
    }
    Limit limit = r.limit();
    if (limit != null) {
      return "limit hit: " + limit;
    }
    if (r.exitCode() != 0) {
      return "exit code " + r.exitCode() + ": " + firstLine(r.stderr());
    }
    return "result '" + firstLine(String.valueOf(r.result())) + "', expected '" + expected + "'";
  }

  static void check(ExecResult r, @Nullable String expected) {
    if (r.error() != null || (expected != null && !expected.equals(r.result()))) {
      throw new AgentNestException(
          "benchmark call returned an unexpected result: " + describe(r, expected));
    }
  }

  private static String firstLine(String s) {
    String line = s.strip().lines().findFirst().orElse("");
    return line.length() > 200 ? line.substring(0, 200) + "..." : line;
  }

  /**
   * The approvals benchmark measures what one question costs, not the sandbox's question budget:
   * its own sandbox gets a budget that holds every question it asks ({@code questions}), so the
   * default run (5 warm-up + 50 measured of each kind) no longer trips the default 50-question
   * burst.
   */
  static SandboxBudgets approvalsBudget(SandboxBudgets base, int questions) {
    int burst = (int) Math.min(10_000L, Math.max(base.askBurst(), questions * 2L + 10));
    double rate = Math.max(base.asksPerSecond(), 1_000);
    return base.withAskBurst(burst).withAsksPerSecond(rate);
  }

  /** {@code n} timed runs of {@code body} in milliseconds, after {@code warm} untimed ones. */
  static double[] measure(String op, int n, int warm, Runnable body) {
    return measure(op, n, warm, () -> {}, body);
  }

  /** As above, with {@code before} run ahead of each sample, outside its time. */
  static double[] measure(String op, int n, int warm, Runnable before, Runnable body) {
    for (int i = 0; i < warm; i++) {
      before.run();
      body.run();
    }
    double[] ms = new double[n];
    try (ProgressBar pb = Progress.bar(op, n)) {
      for (int i = 0; i < n; i++) {
        before.run();
        long t0 = System.nanoTime();
        body.run();
        ms[i] = (System.nanoTime() - t0) / 1e6;
        pb.step();
      }
    }
    return ms;
  }
}
