package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.PoolOptions;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxPool;
import io.agentnest.Secret;
import java.util.Map;
import me.tongfei.progressbar.ProgressBar;

/** {@code bench --only pool}: what a warm pool's hand-out costs. */
final class PoolBench {
  private PoolBench() {}

  /**
   * Pooled acquire and acquire + first result: each sample takes a sandbox the pool started
   * earlier, with a secret given at hand-out (as a real user would), runs {@code 1 + 1} and closes
   * it; the next sample waits (unmeasured, bounded) until the pool has refilled.
   */
  static void run(SandboxConfig config, int iterations, int warmup, Map<String, double[]> samples) {
    PoolOptions options =
        PoolOptions.builder().name("bench").minIdle(2).maxTotal(4).refillConcurrency(1).build();
    SandboxConfig perUse =
        config.toBuilder().secretEnv("BENCH_TOKEN", Secret.of("b3nch-t0ken")).build();
    int n = iterations + warmup;
    double[] acquire = new double[iterations];
    double[] first = new double[iterations];
    try (SandboxPool pool = SandboxPool.start(config, options);
        ProgressBar pb = Progress.bar("pool", n)) {
      for (int i = 0; i < n; i++) {
        awaitIdle(pool, 2);
        // A member counts as waiting once its container runs and has its bootstrap; its agent
        // and interpreter then start. A warm pool's members waited long before: so here too.
        settle();
        long t0 = System.nanoTime();
        try (Sandbox sb = pool.acquire(perUse)) {
          long t1 = System.nanoTime();
          BenchCommand.check(sb.runCode("1 + 1"), "2");
          long t2 = System.nanoTime();
          if (i >= warmup) {
            acquire[i - warmup] = (t1 - t0) / 1e6;
            first[i - warmup] = (t2 - t0) / 1e6;
          }
        }
        pb.step();
      }
    }
    samples.put("pool acquire", acquire);
    samples.put("pool acquire+first result", first);
  }

  private static void settle() {
    try {
      Thread.sleep(1500);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while the pool refilled", e);
    }
  }

  /** Waits (at most five minutes) until {@code n} pooled sandboxes wait. */
  private static void awaitIdle(SandboxPool pool, int n) {
    for (int i = 0; i < 3000 && pool.stats().idle() < n; i++) {
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
