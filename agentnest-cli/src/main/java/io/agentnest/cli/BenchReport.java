package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.spi.support.Percentiles;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/** What {@code agentnest bench} prints: per operation p50/p95/p99/min/max, as a table or JSON. */
final class BenchReport {
  /** One operation's samples, summarised (milliseconds unless {@link #unit} says otherwise). */
  record Stat(String op, int n, double p50, double p95, double p99, double min, double max) {}

  private BenchReport() {}

  static Stat stat(String op, double[] ms) {
    double[] s = ms.clone();
    Arrays.sort(s);
    return new Stat(
        op,
        s.length,
        Percentiles.nearestRank(s, 50),
        Percentiles.nearestRank(s, 95),
        Percentiles.nearestRank(s, 99),
        s[0],
        s[s.length - 1]);
  }

  /** The table, or with {@code json} one JSON object, of {@code stats} on {@code out}. */
  static void print(
      PrintStream out,
      List<Stat> stats,
      String backend,
      String image,
      String runtime,
      int hostCores,
      boolean json) {
    if (json) {
      ObjectNode root = CliJson.object();
      root.put("backend", backend).put("image", image).put("runtime", runtime);
      root.put("cpus_host", hostCores);
      ArrayNode arr = root.putArray("results");
      for (Stat s : stats) {
        arr.addObject()
            .put("op", s.op())
            .put("n", s.n())
            .put("p50_ms", round(s.p50()))
            .put("p95_ms", round(s.p95()))
            .put("p99_ms", round(s.p99()))
            .put("min_ms", round(s.min()))
            .put("max_ms", round(s.max()))
            .put("unit", unit(s.op()));
      }
      out.println(root);
      return;
    }
    out.printf(
        "agentnest bench: backend %s, image %s, runtime %s, %d host cores%n",
        backend, image, runtime, hostCores);
    out.printf(
        "%-34s %6s %10s %10s %10s %10s %10s  %s%n",
        "operation", "n", "p50", "p95", "p99", "min", "max", "unit");
    for (Stat s : stats) {
      out.printf(
          "%-34s %6d %10.2f %10.2f %10.2f %10.2f %10.2f  %s%n",
          s.op(), s.n(), s.p50(), s.p95(), s.p99(), s.min(), s.max(), unit(s.op()));
    }
  }

  static String unit(String op) {
    if (op.endsWith("_per_s")) {
      return "events/s";
    }
    if (op.endsWith("_mib")) {
      return "MiB";
    }
    if (op.endsWith("_kib")) {
      return "KiB";
    }
    if (op.endsWith("_count")) {
      return "count";
    }
    return op.equals("redaction") || op.endsWith("MBps") ? "MB/s" : "ms";
  }

  private static double round(double v) {
    return Math.round(v * 100) / 100.0;
  }
}
