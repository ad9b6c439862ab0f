package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.DaemonThreads;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import me.tongfei.progressbar.ProgressBar;

/**
 * {@code bench --only density}: many idle sandboxes on one host. What it costs the host (JVM RSS,
 * heap, threads), what each sandbox costs as its cgroup sees it, how long starting them all takes,
 * and whether a neighbour's session call stays fast while they all idle.
 */
final class DensityBench {
  /** Sandboxes started at once: the engine, not the host, sets the pace on two cores. */
  private static final int CONCURRENCY = 4;

  /** Starting stops (with a notice) when the machine has less memory available than this. */
  static final long MIN_AVAILABLE = 4L << 30;

  private static final String LABEL = "bench";

  /**
   * Unmeasured pause after the burst of starts: the engine's own work on them (shims, cgroups, the
   * daemon's bookkeeping) would otherwise be counted as the idle neighbours' cost.
   */
  private static final long SETTLE_MS = 10_000;

  private DensityBench() {}

  static void run(
      SandboxConfig config,
      int count,
      int iterations,
      int warmup,
      Map<String, double[]> samples,
      PrintStream notes) {
    String tag = "density-" + ProcessHandle.current().pid();
    SandboxConfig idle = config.toBuilder().label(LABEL, tag).build();
    RuntimeBackend backend = Backends.get(idle.backend());
    Started made = new Started(backend, tag);
    // Ctrl-C or a failure: destroy what this run started, also sandboxes still starting then.
    // The run's own threads go on while the hook runs: it stops them first. A normal end does the
    // same and drops the hook.
    Thread hook =
        new Thread(
            () -> {
              System.err.printf("%ndensity: stopped; destroying the sandboxes this run started%n");
              made.stopAndDestroy();
            },
            "agentnest-bench-density-stop");
    Runtime.getRuntime().addShutdownHook(hook);
    ExecutorService threads = DaemonThreads.pool("agentnest-bench-density");
    try {
      Host before = Host.measure();
      double[] each = new double[count];
      long t0 = System.nanoTime();
      int started = start(idle, count, each, made, threads, notes);
      double total = (System.nanoTime() - t0) / 1e6;
      Host after = Host.measure();

      samples.put("density start " + started + " sandboxes", new double[] {total});
      samples.put("density start each", Arrays.copyOf(each, started));
      samples.put("density host-rss-before_mib", new double[] {before.rss / 1048576.0});
      samples.put("density host-rss-after_mib", new double[] {after.rss / 1048576.0});
      samples.put(
          "density host-rss-per-sandbox_kib",
          new double[] {(after.rss - before.rss) / 1024.0 / started});
      samples.put(
          "density host-heap-per-sandbox_kib",
          new double[] {(after.heap - before.heap) / 1024.0 / started});
      samples.put("density host-threads-before_count", new double[] {before.threads});
      samples.put("density host-threads-after_count", new double[] {after.threads});
      samples.put("density channel-threads_count", new double[] {channelThreads()});

      List<Double> usage = new ArrayList<>();
      List<Double> anon = new ArrayList<>();
      for (Sandbox sb : made.list()) {
        CgroupMemory.of(sb.id())
            .ifPresent(
                m -> {
                  usage.add(m.usage / 1048576.0);
                  anon.add(m.anon / 1048576.0);
                });
      }
      if (usage.isEmpty()) {
        notes.println(
            "density: no container cgroup found on this host (remote engine or another"
                + " layout): per-sandbox memory not reported");
      } else {
        samples.put("density sandbox-memory_mib", toArray(usage));
        samples.put("density sandbox-anon-rss_mib", toArray(anon));
      }
      settle();
      samples.put("density neighbour session", neighbour(idle, iterations, warmup, made));
      notes.printf(
          "density: %d idle sandboxes started in %.1f s; host JVM RSS %.0f -> %.0f MiB (%.0f KiB"
              + " per sandbox), heap after GC %.1f -> %.1f MiB, OS threads %d -> %d, channel"
              + " threads %d; per sandbox (cgroup, mean of %d): %.1f MiB charged, %.1f MiB"
              + " anonymous%n",
          started,
          total / 1000,
          before.rss / 1048576.0,
          after.rss / 1048576.0,
          (after.rss - before.rss) / 1024.0 / started,
          before.heap / 1048576.0,
          after.heap / 1048576.0,
          before.threads,
          after.threads,
          channelThreads(),
          usage.size(),
          mean(usage),
          mean(anon));
      notes.println("density: JVM threads with the sandboxes idle: " + threadGroups());
    } finally {
      made.stopAndDestroy();
      threads.shutdownNow();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs anyway
      }
    }
  }

  /** Starts up to {@code count} sandboxes, each to a first Python result; returns how many. */
  private static int start(
      SandboxConfig config,
      int count,
      double[] each,
      Started made,
      ExecutorService threads,
      PrintStream notes) {
    int started = 0;
    try (ProgressBar pb = Progress.bar("density", count)) {
      for (int from = 0; from < count && !made.stopping(); from += CONCURRENCY) {
        long available = availableMemory().orElse(Long.MAX_VALUE);
        if (available < MIN_AVAILABLE) {
          notes.printf(
              "density: stopped at %d sandboxes: %d MiB of memory left, below the %d MiB floor%n",
              started, available >> 20, MIN_AVAILABLE >> 20);
          break;
        }
        List<Future<Double>> wave = new ArrayList<>();
        for (int i = from; i < Math.min(count, from + CONCURRENCY); i++) {
          wave.add(threads.submit(() -> startOne(config, made)));
        }
        RuntimeException failed = null;
        for (Future<Double> f : wave) {
          try {
            double ms = await(f);
            each[started] = ms;
            started++;
            pb.step();
          } catch (RuntimeException e) {
            failed = failed == null ? e : failed;
          }
        }
        if (failed != null) {
          throw failed;
        }
      }
    }
    if (started == 0) {
      throw new AgentNestException(
          "density: no sandbox started: the machine has less than "
              + (MIN_AVAILABLE >> 20)
              + " MiB of memory available");
    }
    return started;
  }

  private static double startOne(SandboxConfig config, Started made) {
    long t0 = System.nanoTime();
    Sandbox sb = made.create(config);
    BenchCommand.check(sb.runCode("1 + 1"), "2");
    return (System.nanoTime() - t0) / 1e6;
  }

  private static void settle() {
    try {
      Thread.sleep(SETTLE_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while the sandboxes settled", e);
    }
  }

  /** A warm session call on one more sandbox while all the others idle. */
  private static double[] neighbour(
      SandboxConfig config, int iterations, int warmup, Started made) {
    // Destroyed with the others, at the end or by the hook.
    Sandbox sb = made.create(config);
    for (int i = 0; i < warmup; i++) {
      BenchCommand.check(sb.runCode("x = 1"), null);
    }
    double[] ms = new double[iterations];
    try (ProgressBar pb = Progress.bar("density neighbour", iterations)) {
      for (int i = 0; i < iterations; i++) {
        long t0 = System.nanoTime();
        ExecResult r = sb.runCode("x = 1");
        ms[i] = (System.nanoTime() - t0) / 1e6;
        BenchCommand.check(r, null);
        pb.step();
      }
    }
    return ms;
  }

  /**
   * What one run started. Destroyed at its end, or by the shutdown hook: the run's own threads go
   * on while a hook runs, so it first stops new starts and waits for those in flight.
   */
  static final class Started {
    private static final long IN_FLIGHT_WAIT_MS = 60_000;
    private final RuntimeBackend backend;
    private final String tag;
    private final List<Sandbox> list = new ArrayList<>(); // guarded by this
    private boolean stopping; // guarded by this
    private int inFlight; // guarded by this

    Started(RuntimeBackend backend, String tag) {
      this.backend = backend;
      this.tag = tag;
    }

    synchronized boolean stopping() {
      return stopping;
    }

    synchronized List<Sandbox> list() {
      return new ArrayList<>(list);
    }

    /** Creates a sandbox of this run; once the run stops, one that comes up is destroyed. */
    Sandbox create(SandboxConfig config) {
      synchronized (this) {
        if (stopping) {
          throw stopped();
        }
        inFlight++;
      }
      try {
        Sandbox sb = Sandbox.create(config);
        synchronized (this) {
          if (!stopping) {
            list.add(sb);
            return sb;
          }
        }
        sb.destroy();
        throw stopped();
      } finally {
        synchronized (this) {
          inFlight--;
          notifyAll();
        }
      }
    }

    private static AgentNestException stopped() {
      return new AgentNestException("density: the run was stopped");
    }

    /** Stops new starts, waits for those in flight (bounded), destroys everything. Idempotent. */
    void stopAndDestroy() {
      List<Sandbox> copy;
      synchronized (this) {
        stopping = true;
        long deadline = System.currentTimeMillis() + IN_FLIGHT_WAIT_MS;
        try {
          for (long left = IN_FLIGHT_WAIT_MS;
              inFlight > 0 && left > 0;
              left = deadline - System.currentTimeMillis()) {
            wait(left);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        copy = new ArrayList<>(list);
        list.clear();
      }
      ExecutorService closing = DaemonThreads.pool("agentnest-bench-density-destroy");
      try {
        List<Future<?>> done = new ArrayList<>();
        for (Sandbox sb : copy) {
          done.add(closing.submit(sb::destroy));
        }
        for (Future<?> f : done) {
          try {
            f.get();
          } catch (ExecutionException e) {
            System.err.println("density: destroying a sandbox failed: " + e.getCause());
          }
        }
        // A start that failed half-way, or one still starting after the wait.
        for (SandboxInfo info : backend.list()) {
          if (tag.equals(info.labels().get(LABEL))) {
            backend.destroy(info.id());
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException e) {
        System.err.println(
            "density: cleaning up failed (" + e.getMessage() + "): run 'agentnest prune'");
      } finally {
        closing.shutdownNow();
      }
    }
  }

  private static long channelThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("agentnest-channel-"))
        .count();
  }

  /**
   * Live JVM threads by name, numbers dropped ("agentnest-dispatch-3" counts as one of its kind).
   */
  static String threadGroups() {
    Map<String, Long> groups =
        Thread.getAllStackTraces().keySet().stream()
            .map(t -> t.getName().replaceAll("[-#]?[0-9]+$", ""))
            .collect(Collectors.groupingBy(n -> n, TreeMap::new, Collectors.counting()));
    return groups.toString();
  }

  private static double[] toArray(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).toArray();
  }

  private static double mean(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN);
  }

  private static <T> T await(Future<T> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while starting sandboxes", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new AgentNestException("starting a sandbox failed: " + e.getCause(), e);
    }
  }

  /** MemAvailable from /proc/meminfo, where there is one. */
  static OptionalLong availableMemory() {
    return procField(Path.of("/proc/meminfo"), "MemAvailable:");
  }

  /** A "Name: 123 kB" (or plain count) field of a /proc file, in bytes for kB values. */
  static OptionalLong procField(Path file, String name) {
    try {
      for (String line : Files.readAllLines(file)) {
        if (line.startsWith(name)) {
          String[] parts = line.substring(name.length()).trim().split("\\s+");
          long v = Long.parseLong(parts[0]);
          return OptionalLong.of(parts.length > 1 && parts[1].equals("kB") ? v * 1024 : v);
        }
      }
    } catch (IOException | RuntimeException e) {
      return OptionalLong.empty();
    }
    return OptionalLong.empty();
  }

  /** The host process: RSS and OS threads from /proc/self/status, heap used after a GC. */
  record Host(long rss, long heap, long threads) {
    static Host measure() {
      System.gc();
      Runtime rt = Runtime.getRuntime();
      Path status = Path.of("/proc/self/status");
      return new Host(
          procField(status, "VmRSS:").orElse(-1),
          rt.totalMemory() - rt.freeMemory(),
          procField(status, "Threads:").orElse(Thread.activeCount()));
    }
  }

  /**
   * A container's memory as its cgroup counts it: all it is charged (page cache included) and its
   * anonymous memory (the agent's and the interpreter's heaps). cgroup v1 and v2 layouts of
   * Docker's cgroupfs and systemd drivers.
   */
  record CgroupMemory(long usage, long anon) {
    static Optional<CgroupMemory> of(String id) {
      Path v1 = Path.of("/sys/fs/cgroup/memory/docker", id);
      if (Files.isDirectory(v1)) {
        OptionalLong usage = number(v1.resolve("memory.usage_in_bytes"));
        OptionalLong rss = statField(v1.resolve("memory.stat"), "total_rss");
        if (usage.isPresent() && rss.isPresent()) {
          return Optional.of(new CgroupMemory(usage.getAsLong(), rss.getAsLong()));
        }
      }
      for (Path v2 :
          List.of(
              Path.of("/sys/fs/cgroup/docker", id),
              Path.of("/sys/fs/cgroup/system.slice", "docker-" + id + ".scope"))) {
        if (Files.isDirectory(v2)) {
          OptionalLong usage = number(v2.resolve("memory.current"));
          OptionalLong anon = statField(v2.resolve("memory.stat"), "anon");
          if (usage.isPresent() && anon.isPresent()) {
            return Optional.of(new CgroupMemory(usage.getAsLong(), anon.getAsLong()));
          }
        }
      }
      return Optional.empty();
    }

    private static OptionalLong number(Path file) {
      try {
        return OptionalLong.of(Long.parseLong(Files.readString(file).trim()));
      } catch (IOException | RuntimeException e) {
        return OptionalLong.empty();
      }
    }

    private static OptionalLong statField(Path file, String key) {
      try {
        for (String line : Files.readAllLines(file)) {
          String[] kv = line.split(" ");
          if (kv.length == 2 && kv[0].equals(key)) {
            return OptionalLong.of(Long.parseLong(kv[1]));
          }
        }
      } catch (IOException | RuntimeException e) {
        return OptionalLong.empty();
      }
      return OptionalLong.empty();
    }
  }
}
