package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.support.DaemonThreads;
import io.agentnest.spi.support.Percentiles;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * {@code bench --only server}: what the HTTP server costs. A server runs in this process on an
 * ephemeral loopback port, with a temporary AGENTNEST_HOME and one tenant; a warm session call
 * ({@code runCode("x = 1")}) is measured in-process and through the server (the remote client),
 * then {@code clients} threads each loop session calls through the server for {@code seconds}.
 */
final class ServerBench {
  /** The server's own cap on named sessions per sandbox: clients are spread so none is over. */
  private static final int SESSIONS_PER_SANDBOX = 16;

  /**
   * Warm-up calls of the single-call comparison, whatever --warmup says: the HTTP path (Jetty, the
   * JDK client, Jackson) runs interpreted for its first few hundred calls, and five warm-up calls
   * measured the JIT rather than the server (+8.9 ms at 5, about +2 ms at 300 on this machine, +0.3
   * ms after 3,000 with the server in another process).
   */
  static final int MIN_WARMUP = 2000;

  private ServerBench() {}

  /**
   * The knobs of the concurrent phase.
   *
   * @param pauseMillis each client's mean pause between calls; 0 loops back to back (a closed loop,
   *     where latency is the queue: clients divided by what the machine serves per second). Each
   *     client starts at a random point of its first pause and draws each pause uniformly from half
   *     to one and a half of it: with one fixed pause and one start, all clients called at the same
   *     instant once a second, and the bench measured a burst of 200 simultaneous calls on 2 cores
   *     (p99 258 ms, the last of the wave) rather than 200 clients.
   */
  record Load(int clients, int seconds, int pauseMillis, int idle) {}

  static void run(
      SandboxConfig config,
      int iterations,
      int warmup,
      Load load,
      Map<String, double[]> samples,
      PrintStream notes) {
    if (load.clients() < 1
        || load.seconds() < 1
        || load.pauseMillis() < 0
        || load.idle() < 0
        || load.idle() > 1000) {
      throw new ConfigException(
          "--server-clients and --server-seconds must be >= 1, --server-pause-ms >= 0,"
              + " --server-idle 0..1000");
    }
    if (!config.backend().equals("docker")) {
      throw new ConfigException(
          "--only server runs its server on the Docker engine: drop --backend " + config.backend());
    }
    int sandboxes = (load.clients() + SESSIONS_PER_SANDBOX - 1) / SESSIONS_PER_SANDBOX;
    try (BenchServer server = new BenchServer(Math.max(sandboxes + 1, load.idle() + 1))) {
      SandboxConfig remote =
          SandboxConfig.builder().image(config.image()).remote(server.url, server.key).build();
      try (Sandbox local = Sandbox.create(config);
          Sandbox viaServer = Sandbox.create(remote)) {
        int warm = Math.max(warmup, MIN_WARMUP);
        double[] in = new double[iterations];
        double[] out = new double[iterations];
        measure(local, viaServer, in, out, warm);
        samples.put("server session in-process", in);
        samples.put("server session via server", out);
        notes.printf(
            "server: session call p50 %.2f ms in-process, %.2f ms via the server (+%.2f ms);"
                + " p95 %.2f vs %.2f ms (+%.2f ms)%n",
            Percentiles.nearestRank(in, 50),
            Percentiles.nearestRank(out, 50),
            Percentiles.nearestRank(out, 50) - Percentiles.nearestRank(in, 50),
            Percentiles.nearestRank(in, 95),
            Percentiles.nearestRank(out, 95),
            Percentiles.nearestRank(out, 95) - Percentiles.nearestRank(in, 95));
      }
      concurrent(remote, sandboxes, load, samples, notes);
      if (load.idle() > 0) {
        idle(remote, load.idle(), notes);
      }
    }
  }

  /**
   * The server's memory with {@code n} idle sandboxes made through its API: this process's RSS,
   * heap after a GC and OS threads before and after (the bench's own remote handles are a few
   * hundred bytes each; the sandboxes' own memory is the engine's, in their cgroups).
   */
  private static void idle(SandboxConfig remote, int n, PrintStream notes) {
    // Settled on both sides alike: right after the load phase, the process still held (and then
    // gave back) its buffers, and the figure per sandbox came out negative.
    sleep(10_000);
    DensityBench.Host before = DensityBench.Host.measure();
    List<Sandbox> boxes = new ArrayList<>();
    ExecutorService threads = DaemonThreads.pool("agentnest-bench-server-idle");
    try {
      List<Future<Sandbox>> made = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        made.add(threads.submit(() -> Sandbox.create(remote)));
        if (made.size() % 4 == 0) {
          for (Future<Sandbox> f : made) {
            boxes.add(await(f));
          }
          made.clear();
        }
      }
      for (Future<Sandbox> f : made) {
        boxes.add(await(f));
      }
      // Let the starts' garbage and buffers settle before measuring the resting cost.
      sleep(10_000);
      DensityBench.Host after = DensityBench.Host.measure();
      notes.printf(
          "server: %d idle sandboxes through the server: process RSS %.0f -> %.0f MiB"
              + " (%.0f KiB per sandbox; the JVM also returns memory it no longer uses, so this"
              + " can fall), heap after GC %.0f -> %.0f MiB (%.0f KiB per sandbox), threads %d ->"
              + " %d%n",
          n,
          before.rss() / 1048576.0,
          after.rss() / 1048576.0,
          (after.rss() - before.rss()) / 1024.0 / n,
          before.heap() / 1048576.0,
          after.heap() / 1048576.0,
          (after.heap() - before.heap()) / 1024.0 / n,
          before.threads(),
          after.threads());
    } finally {
      boxes.forEach(Sandbox::close);
      threads.shutdown();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted", e);
    }
  }

  /**
   * Each client has its own named session on one of the shared sandboxes and loops calls until the
   * deadline; a failed call is counted (with its first message kept) and the loop goes on.
   */
  private static void concurrent(
      SandboxConfig remote,
      int sandboxCount,
      Load load,
      Map<String, double[]> samples,
      PrintStream notes) {
    List<Sandbox> boxes = new ArrayList<>();
    ExecutorService threads = DaemonThreads.pool("agentnest-bench-server");
    try {
      for (int i = 0; i < sandboxCount; i++) {
        boxes.add(Sandbox.create(remote));
      }
      // Each client's first call starts its session's Python interpreter (about a second here):
      // those starts are warm-up, not calls, so they happen before the clock (they were the whole
      // p99 before: 50 clients, 50 starts, about the slowest 1% of the calls).
      List<Future<?>> starts = new ArrayList<>();
      for (int c = 0; c < load.clients(); c++) {
        Sandbox sb = boxes.get(c % sandboxCount);
        String session = "c" + c;
        starts.add(threads.submit(() -> sb.pythonSession(session).run("x = 1")));
      }
      for (Future<?> f : starts) {
        await(f);
      }
      AtomicLong errors = new AtomicLong();
      String[] firstError = {null};
      long deadline = System.nanoTime() + load.seconds() * 1_000_000_000L;
      List<Future<double[]>> clients = new ArrayList<>();
      for (int c = 0; c < load.clients(); c++) {
        Sandbox sb = boxes.get(c % sandboxCount);
        String session = "c" + c;
        clients.add(
            threads.submit(
                () -> {
                  // Bounded: at most one sample per call, and calls stop at the deadline.
                  List<Double> ms = new ArrayList<>();
                  if (load.pauseMillis() > 0) {
                    Thread.sleep(ThreadLocalRandom.current().nextLong(load.pauseMillis()));
                  }
                  while (System.nanoTime() < deadline) {
                    long t0 = System.nanoTime();
                    try {
                      ExecResult r = sb.pythonSession(session).run("x = 1");
                      if (r.error() != null) {
                        throw new AgentNestException("call failed: " + r.error());
                      }
                      ms.add((System.nanoTime() - t0) / 1e6);
                      if (load.pauseMillis() > 0) {
                        Thread.sleep(
                            load.pauseMillis() / 2
                                + ThreadLocalRandom.current().nextLong(load.pauseMillis() + 1));
                      }
                    } catch (RuntimeException e) {
                      errors.incrementAndGet();
                      synchronized (firstError) {
                        if (firstError[0] == null) {
                          firstError[0] = String.valueOf(e.getMessage());
                        }
                      }
                    }
                  }
                  return ms.stream().mapToDouble(Double::doubleValue).toArray();
                }));
      }
      List<double[]> all = new ArrayList<>();
      for (Future<double[]> f : clients) {
        all.add(await(f));
      }
      double[] merged = all.stream().flatMapToDouble(Arrays::stream).toArray();
      String op = "server " + load.clients() + " clients";
      if (merged.length > 0) {
        samples.put(op, merged);
      }
      @Nullable String first = firstError[0];
      notes.printf(
          "server: %d clients (pause %d ms) on %d sandboxes for %d s: %d calls, %d errors%s,"
              + " p50 %.2f ms, p99 %.2f ms, %.0f calls/s%n",
          load.clients(),
          load.pauseMillis(),
          sandboxCount,
          load.seconds(),
          merged.length,
          errors.get(),
          first == null ? "" : " (first: " + first + ")",
          merged.length == 0 ? Double.NaN : Percentiles.nearestRank(merged, 50),
          merged.length == 0 ? Double.NaN : Percentiles.nearestRank(merged, 99),
          merged.length / (double) load.seconds());
    } finally {
      boxes.forEach(Sandbox::close);
      threads.shutdown();
    }
  }

  /**
   * Alternates an in-process call and a call through the server, so that whatever else the machine
   * does while measuring (a build, the JIT of either path) weighs on both sides alike.
   */
  private static void measure(
      Sandbox local, Sandbox viaServer, double[] in, double[] out, int warm) {
    for (int i = 0; i < warm; i++) {
      call(local);
      call(viaServer);
    }
    for (int i = 0; i < in.length; i++) {
      in[i] = timed(local);
      out[i] = timed(viaServer);
    }
  }

  private static double timed(Sandbox sb) {
    long t0 = System.nanoTime();
    call(sb);
    return (System.nanoTime() - t0) / 1e6;
  }

  private static void call(Sandbox sb) {
    ExecResult r = sb.runCode("x = 1");
    if (r.error() != null) {
      throw new AgentNestException(
          "benchmark call returned an unexpected result: " + BenchSteps.describe(r, null));
    }
  }

  private static <T> T await(Future<T> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }
}
