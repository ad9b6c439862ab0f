package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.kubernetes.QuotaExceededException;
import io.agentnest.spi.support.DaemonThreads;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import me.tongfei.progressbar.ProgressBar;

/**
 * {@code bench --only tenant-fill}: fills one Kubernetes tenant with sandboxes up to its pod quota,
 * each answering a first Python result, then asks for one more, which the quota must refuse. What a
 * cluster operator sizing a tenant wants to know: how long a burst of sandboxes takes to come up
 * and that the quota holds at the edge.
 */
final class TenantFillBench {
  /** Sandboxes started at once: the API server and the kubelet, not the host, set the pace. */
  private static final int CONCURRENCY = 4;

  private TenantFillBench() {}

  static void run(SandboxConfig config, int count, Map<String, double[]> samples) {
    if (!config.backend().equals("kubernetes")) {
      throw new ConfigException(
          "--only tenant-fill measures a Kubernetes tenant: add --backend kubernetes");
    }
    List<Sandbox> made = new ArrayList<>();
    double[] each = new double[count];
    ExecutorService threads = DaemonThreads.pool("agentnest-bench-fill");
    long start = System.nanoTime();
    try (ProgressBar pb = Progress.bar("tenant-fill", count)) {
      for (int from = 0; from < count; from += CONCURRENCY) {
        List<Future<Sandbox>> wave = new ArrayList<>();
        for (int i = from; i < Math.min(count, from + CONCURRENCY); i++) {
          int slot = i;
          wave.add(
              threads.submit(
                  () -> {
                    long t0 = System.nanoTime();
                    Sandbox sb = Sandbox.create(config);
                    try {
                      ExecResult r = sb.runCode("1 + 1");
                      if (!"2".equals(r.result())) {
                        throw new IllegalStateException("unexpected result " + r.result());
                      }
                    } catch (RuntimeException e) {
                      sb.close();
                      throw e;
                    }
                    each[slot] = (System.nanoTime() - t0) / 1e6;
                    return sb;
                  }));
        }
        RuntimeException failed = null;
        for (Future<Sandbox> f : wave) {
          try {
            made.add(await(f)); // every started sandbox is kept, to be closed below
            pb.step();
          } catch (RuntimeException e) {
            failed = failed == null ? e : failed;
          }
        }
        if (failed != null) {
          throw failed;
        }
      }
      double total = (System.nanoTime() - start) / 1e6;
      samples.put("tenant-fill-each", each);
      samples.put("tenant-fill-all-" + count, new double[] {total});
      String refusal;
      try (Sandbox extra = Sandbox.create(config)) {
        refusal = null;
      } catch (QuotaExceededException e) {
        refusal = e.getMessage();
      }
      if (refusal == null) {
        System.err.printf(
            "tenant-fill: sandbox %d was NOT refused: the tenant's pod quota is above %d or"
                + " unset (set kubernetes.quota.pods or AGENTNEST_KUBERNETES_QUOTA_PODS=%d to see"
                + " it enforced)%n",
            count + 1, count, count);
      } else {
        System.err.printf("tenant-fill: sandbox %d refused by the quota: %s%n", count + 1, refusal);
      }
    } finally {
      List<Future<?>> closing = new ArrayList<>();
      for (Sandbox sb : made) {
        closing.add(threads.submit(sb::close));
      }
      for (Future<?> f : closing) {
        await(f);
      }
      threads.shutdown();
    }
  }

  private static <T> T await(Future<T> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }
}
