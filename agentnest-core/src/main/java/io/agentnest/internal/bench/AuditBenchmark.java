package io.agentnest.internal.bench;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.audit.VerifyReport;
import io.agentnest.spi.Benchmark;
import io.agentnest.spi.support.Percentiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * Measures the audit log: write throughput (record until indexed and fsynced) and query latency
 * over the resulting log for three query shapes (by sandbox prefix, type + since, free text), plus
 * a rare-text worst case, reopen and verify. Run: {@code java -cp ... io.agentnest.internal.bench
 * .AuditBenchmark [events] [queries] [dir]}, or {@code agentnest bench --only audit}.
 */
public final class AuditBenchmark implements Benchmark {
  private static final int BENCH_EVENTS = 1_000_000;

  @Override
  public String name() {
    return "audit";
  }

  /**
   * One million events in a fresh temporary directory, {@code iterations} (at least 20) queries.
   */
  @Override
  public Map<String, double[]> run(int iterations) throws IOException {
    Path dir = Files.createTempDirectory("agentnest-audit-bench-");
    return run(dir, BENCH_EVENTS, Math.max(20, iterations));
  }

  private static final String[] WORDS = {
    "pytest",
    "numpy",
    "pandas",
    "requests",
    "curl",
    "make",
    "git",
    "pip",
    "grep",
    "sed",
    "ls",
    "python3",
    "node",
    "npm",
    "cargo",
    "gcc",
    "tar",
    "unzip",
    "jq",
    "awk"
  };
  private static final String[] HOSTS = {
    "pypi.org",
    "files.pythonhosted.org",
    "github.com",
    "registry.npmjs.org",
    "api.openai.com",
    "example.com",
    "169.254.169.254",
    "crates.io"
  };
  private static final String[] TYPES = {
    AuditEvent.EXEC_STARTED,
    AuditEvent.EXEC_FINISHED,
    AuditEvent.EXEC_STARTED,
    AuditEvent.EXEC_FINISHED,
    AuditEvent.FILE_READ,
    AuditEvent.FILE_WRITE,
    AuditEvent.FILE_WRITE,
    AuditEvent.NETWORK_ATTEMPT,
    AuditEvent.NETWORK_ATTEMPT,
    AuditEvent.SECRET_REDACTED,
    AuditEvent.FILE_DELETE,
    AuditEvent.LIMIT_HIT,
    AuditEvent.APPROVAL_REQUESTED,
    AuditEvent.APPROVAL_DECIDED,
    AuditEvent.POLICY_VIOLATION
  };

  public AuditBenchmark() {}

  /**
   * Writes {@code events} synthetic records into a fresh log in {@code dir} and runs {@code
   * queries} queries of each shape. Keys: {@code write_events_per_s}, {@code record_events_per_s}
   * (one value each), {@code query_sandbox_ms}, {@code query_type_since_ms}, {@code query_text_ms},
   * {@code query_text_rare_ms} (one value per query), {@code reopen_ms}, {@code verify_ms}, {@code
   * index_db_mib}, {@code events_jsonl_mib}.
   */
  public static Map<String, double[]> run(Path dir, int events, int queries) {
    Map<String, double[]> out = new LinkedHashMap<>();
    SplittableRandom rnd = new SplittableRandom(42);
    String[] sandboxes = new String[200];
    for (int i = 0; i < sandboxes.length; i++) {
      sandboxes[i] = hex(rnd, 64);
    }
    Instant t0;
    Instant t1;
    try (AuditLog log = AuditLog.open(dir)) {
      long start = System.nanoTime();
      t0 = Instant.now();
      for (int i = 0; i < events; i++) {
        String type = TYPES[rnd.nextInt(TYPES.length)];
        log.record(type, sandboxes[rnd.nextInt(sandboxes.length)], data(type, rnd, i));
      }
      long recorded = System.nanoTime();
      log.flush();
      long done = System.nanoTime();
      t1 = Instant.now();
      out.put("record_events_per_s", new double[] {events / seconds(recorded - start)});
      out.put("write_events_per_s", new double[] {events / seconds(done - start)});
    }
    long reopen = System.nanoTime();
    try (AuditLog log = AuditLog.open(dir)) {
      out.put("reopen_ms", new double[] {millis(System.nanoTime() - reopen)});
      long span = Math.max(1, t1.toEpochMilli() - t0.toEpochMilli());
      // warm up the page cache and the JIT a little
      for (int i = 0; i < 5; i++) {
        log.query(AuditQuery.builder().sandbox(sandboxes[i].substring(0, 8)).build());
      }
      double[] bySandbox = new double[queries];
      double[] byTypeSince = new double[queries];
      double[] byText = new double[queries];
      for (int i = 0; i < queries; i++) {
        String prefix = sandboxes[rnd.nextInt(sandboxes.length)].substring(0, 8);
        bySandbox[i] = time(log, AuditQuery.builder().sandbox(prefix).build());
        Instant since = t0.plusMillis(rnd.nextLong(span));
        byTypeSince[i] =
            time(
                log,
                AuditQuery.builder().type(TYPES[rnd.nextInt(TYPES.length)]).since(since).build());
        byText[i] = time(log, AuditQuery.builder().text(WORDS[rnd.nextInt(WORDS.length)]).build());
      }
      out.put("query_sandbox_ms", bySandbox);
      out.put("query_type_since_ms", byTypeSince);
      out.put("query_text_ms", byText);
      double[] rare = new double[Math.max(1, Math.min(queries, 10))];
      for (int i = 0; i < rare.length; i++) {
        rare[i] = time(log, AuditQuery.builder().text("needle-" + rnd.nextInt(1000)).build());
      }
      out.put("query_text_rare_ms", rare);
      long v = System.nanoTime();
      VerifyReport report = log.verify();
      out.put("verify_ms", new double[] {millis(System.nanoTime() - v)});
      if (!report.ok() || report.checked() != events) {
        throw new IllegalStateException("benchmark log does not verify: " + report);
      }
    }
    out.put("index_db_mib", new double[] {mib(dir, AuditLog.INDEX_FILE)});
    // events.jsonl and the rotated events-NNNNNN.jsonl
    out.put("events_jsonl_mib", new double[] {mib(dir, "events")});
    return out;
  }

  private static double time(AuditLog log, AuditQuery q) {
    long s = System.nanoTime();
    List<AuditEvent> r = log.query(q);
    double ms = millis(System.nanoTime() - s);
    if (r.size() > q.limit()) {
      throw new IllegalStateException("limit ignored");
    }
    return ms;
  }

  private static Map<String, Object> data(String type, SplittableRandom rnd, int i) {
    Map<String, Object> d = new LinkedHashMap<>();
    String word = WORDS[rnd.nextInt(WORDS.length)];
    switch (type) {
      case AuditEvent.EXEC_STARTED -> d.put("command", word + " --flag " + rnd.nextInt(1000));
      case AuditEvent.EXEC_FINISHED -> {
        d.put("command", word + " --flag " + rnd.nextInt(1000));
        d.put("exit", rnd.nextInt(10) == 0 ? 1 : 0);
        d.put("duration_ms", rnd.nextInt(5000));
      }
      case AuditEvent.FILE_READ, AuditEvent.FILE_WRITE, AuditEvent.FILE_DELETE -> {
        d.put("path", "data/" + word + "/file" + rnd.nextInt(10_000) + ".csv");
        d.put("size", rnd.nextInt(1 << 20));
      }
      case AuditEvent.NETWORK_ATTEMPT -> {
        boolean allow = rnd.nextInt(4) != 0;
        d.put("host", HOSTS[rnd.nextInt(HOSTS.length)]);
        d.put("port", 443);
        d.put("address", "93.184." + rnd.nextInt(256) + "." + rnd.nextInt(256));
        d.put("decision", allow ? "allow" : "deny");
        d.put("rule", allow ? "allow:*.org" : "default-deny");
        d.put("bytes_up", allow ? rnd.nextInt(100_000) : 0);
        d.put("bytes_down", allow ? rnd.nextInt(10_000_000) : 0);
      }
      case AuditEvent.SECRET_REDACTED -> {
        d.put("rule", "secret:OPENAI_API_KEY");
        d.put("count", 1 + rnd.nextInt(3));
      }
      case AuditEvent.LIMIT_HIT -> {
        d.put("limit", "timeout");
        d.put("command", word);
      }
      case AuditEvent.APPROVAL_REQUESTED -> d.put("action", "exec " + word);
      case AuditEvent.APPROVAL_DECIDED -> {
        d.put("action", "exec " + word);
        d.put("decision", rnd.nextBoolean() ? "approve" : "deny");
      }
      default -> d.put("detail", "blocked " + word);
    }
    if (i % 100_000 == 7) {
      d.put("note", "needle-" + (i / 100_000));
    }
    return d;
  }

  private static String hex(SplittableRandom rnd, int n) {
    StringBuilder sb = new StringBuilder(n);
    for (int i = 0; i < n; i++) {
      sb.append(Character.forDigit(rnd.nextInt(16), 16));
    }
    return sb.toString();
  }

  private static double seconds(long nanos) {
    return nanos / 1e9;
  }

  private static double millis(long nanos) {
    return nanos / 1e6;
  }

  private static double mib(Path dir, String name) {
    try (Stream<Path> s = Files.list(dir)) {
      long total = 0;
      for (Path p : s.filter(p -> p.getFileName().toString().startsWith(name)).toList()) {
        total += Files.size(p);
      }
      return total / (1024.0 * 1024.0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code [events [queries [dir]]]}: defaults 1,000,000, 200 and a temporary directory. */
  public static void main(String[] args) throws IOException {
    int events = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 1_000_000;
    int queries = args.length > 1 ? Integer.parseInt(args[1]) : 200;
    Path dir =
        args.length > 2 ? Path.of(args[2]) : Files.createTempDirectory("agentnest-audit-bench");
    if (AuditLog.exists(dir)) {
      throw new IllegalArgumentException(dir + " already has a log: give an empty directory");
    }
    long s = System.nanoTime();
    Map<String, double[]> r = run(dir, events, queries);
    System.out.printf(
        "audit benchmark: %,d events, %d queries per shape, in %s (%.1f s)%n",
        events, queries, dir, (System.nanoTime() - s) / 1e9);
    List<String> lines = new ArrayList<>();
    for (Map.Entry<String, double[]> e : r.entrySet()) {
      double[] v = e.getValue();
      if (v.length == 1) {
        lines.add(String.format("  %-22s %,14.1f", e.getKey(), v[0]));
      } else {
        lines.add(
            String.format(
                "  %-22s p50 %8.2f  p95 %8.2f  max %8.2f  (n=%d)",
                e.getKey(),
                Percentiles.nearestRank(v, 50),
                Percentiles.nearestRank(v, 95),
                Percentiles.nearestRank(v, 100),
                v.length));
      }
    }
    lines.forEach(System.out::println);
    System.out.flush();
  }
}
