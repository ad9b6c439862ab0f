package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.PoolOptions;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxPool;
import io.agentnest.Secret;
import io.agentnest.spi.support.StartTrace;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import me.tongfei.progressbar.ProgressBar;

/** {@code bench --only pool}: what a warm pool's hand-out costs. */
final class PoolBench {
  private PoolBench() {}

  /**
   * Pooled acquire and acquire + first result: each sample takes a sandbox the pool started
   * earlier, with a secret given at hand-out (as a real user would), runs {@code 1 + 1} and closes
   * it; the next sample waits (unmeasured, bounded) until the pool has refilled. With {@code
   * trace}, each hand-out's steps ({@link StartTrace} marks) are rows too.
   */
  static void run(
      SandboxConfig config,
      int iterations,
      int warmup,
      boolean trace,
      Map<String, double[]> samples) {
    PoolOptions options =
        PoolOptions.builder().name("bench").minIdle(2).maxTotal(4).refillConcurrency(1).build();
    SandboxConfig perUse =
        config.toBuilder().secretEnv("BENCH_TOKEN", Secret.of("b3nch-t0ken")).build();
    int n = iterations + warmup;
    double[] acquire = new double[iterations];
    double[] first = new double[iterations];
    Map<String, List<Double>> steps = new LinkedHashMap<>();
    try (SandboxPool pool = SandboxPool.start(config, options);
        ProgressBar pb = Progress.bar("pool", n)) {
      for (int i = 0; i < n; i++) {
        awaitIdle(pool, 2);
        // A member counts as waiting once its container runs and has its bootstrap; its agent
        // and interpreter then start. A warm pool's members waited long before: so here too.
        settle();
        StartTrace t = trace ? StartTrace.begin() : null;
        long t0 = System.nanoTime();
        try (Sandbox sb = pool.acquire(perUse)) {
          long t1 = System.nanoTime();
          StartTrace.mark("(acquire returned)");
          BenchCommand.check(sb.runCode("1 + 1"), "2");
          long t2 = System.nanoTime();
          StartTrace.mark("first result");
          if (trace) {
            // The next calls, for what the first costs beyond a steady call.
            BenchCommand.check(sb.runCode("1 + 1"), "2");
            StartTrace.mark("second result");
            BenchCommand.check(sb.runCode("1 + 1"), "2");
            StartTrace.mark("third result");
          }
          if (i >= warmup) {
            acquire[i - warmup] = (t1 - t0) / 1e6;
            first[i - warmup] = (t2 - t0) / 1e6;
          }
        } finally {
          if (t != null) {
            List<StartTrace.Step> done = t.end();
            if (i >= warmup) {
              for (StartTrace.Step s : done) {
                steps.computeIfAbsent(s.name(), k -> new ArrayList<>()).add(s.millis());
              }
            }
          }
        }
        pb.step();
      }
    }
    samples.put("pool acquire", acquire);
    samples.put("pool acquire+first result", first);
    steps.forEach(
        (name, ms) ->
            samples.put("pool: " + name, ms.stream().mapToDouble(Double::doubleValue).toArray()));
    neighbour(config, options, Math.max(200, iterations * 20), samples);
  }

  /**
   * Whether refilling starves a running call: a neighbour sandbox's session calls, first while the
   * pool waits full, then while another thread takes and returns pooled sandboxes back to back, so
   * that the pool starts a replacement after every hand-out. Each phase is {@code calls} calls.
   */
  private static void neighbour(
      SandboxConfig config, PoolOptions options, int calls, Map<String, double[]> samples) {
    try (Sandbox neighbour = Sandbox.create(config);
        SandboxPool pool = SandboxPool.start(config, options)) {
      awaitIdle(pool, options.minIdle());
      for (int i = 0; i < 50; i++) {
        BenchCommand.check(neighbour.runCode("x = 1"), null);
      }
      samples.put("pool neighbour call, pool full", calls(neighbour, calls));
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong handedOut = new AtomicLong();
      Thread churn =
          new Thread(
              () -> {
                // Bounded: stops when the measurement ends, and after 10,000 hand-outs at most.
                for (int i = 0; i < 10_000 && !stop.get(); i++) {
                  try (Sandbox sb = pool.acquire()) {
                    sb.runCode("1 + 1");
                    handedOut.incrementAndGet();
                  } catch (RuntimeException e) {
                    // exhausted for a moment while the refills catch up: try again
                  }
                }
              },
              "agentnest-bench-pool-churn");
      churn.setDaemon(true);
      churn.start();
      double[] during;
      try {
        during = calls(neighbour, calls);
      } finally {
        stop.set(true);
      }
      try {
        churn.join(120_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted", e);
      }
      samples.put("pool neighbour call, refilling", during);
      if (handedOut.get() == 0) {
        throw new AgentNestException(
            "the pool handed out nothing during the refill phase: see 'agentnest doctor'");
      }
    }
  }

  private static double[] calls(Sandbox sb, int n) {
    double[] ms = new double[n];
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      BenchCommand.check(sb.runCode("x = 1"), null);
      ms[i] = (System.nanoTime() - t0) / 1e6;
    }
    return ms;
  }

  private static void settle() {
    try {
      Thread.sleep(1500);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while the pool refilled", e);
    }
  }

  /**
   * Waits (at most five minutes) until {@code n} pooled sandboxes wait. The pool's refill logs a
   * failed start and tries again later; here a failed start is followed by one started in the
   * foreground, so that a lasting cause (a missing image, a full engine) reaches the user at once
   * as its own error instead of a five-minute wait, and a passing one costs one more sandbox.
   */
  private static void awaitIdle(SandboxPool pool, int n) {
    long failedSeen = pool.stats().failed();
    for (int i = 0; i < 3000 && pool.stats().idle() < n; i++) {
      long failed = pool.stats().failed();
      if (failed > failedSeen) {
        failedSeen = failed;
        try (Sandbox probe = pool.acquire()) {
          BenchCommand.check(probe.runCode("1 + 1"), "2");
        }
        continue;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted while the pool refilled", e);
      }
    }
    if (pool.stats().idle() < n) {
      throw new AgentNestException(
          "the pool did not refill within 5 minutes ("
              + pool.stats()
              + "): see 'agentnest doctor'");
    }
  }
}
