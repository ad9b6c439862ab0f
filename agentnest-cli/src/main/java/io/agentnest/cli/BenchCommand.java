package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ConfigException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.Benchmark;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Latency benchmarks of the real engine, printed as p50/p95 per operation. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = {
      "Measures p50/p95 latency per operation against the real engine.",
      "Operations (--only NAME,...):",
      "  cold-start   create a sandbox, get a first Python result, destroy it; with",
      "               --trace also each step of it ('cold-start: engine create', ...)",
      "  exec         warm shell exec round trip ('true')",
      "  session      warm Python session call ('x = 1')",
      "  file-1mib    write then read back 1 MiB",
      "  first-byte   time from the sandbox printing a line to the consumer receiving",
      "               it",
      "  redaction    redaction throughput (MB/s) with 100 secrets and the default",
      "               patterns",
      "  egress       egress proxy on loopback: 100 MB download (MB/s) and GET",
      "               latency, proxied and direct (no sandbox involved)",
      "  egress-intercept",
      "               only with --only egress-intercept: HTTPS GET through an opaque",
      "               tunnel and an intercepted one (credential injection),",
      "               intercepted MB/s",
      "  approvals    with an approval policy and an allow-all handler: a session call",
      "               with the audit hook watching, an approved os.remove (question,",
      "               decision, answer) and an approved shell 'rm' (checked on the",
      "               host)",
      "  fork         only with --only fork: fork() and fork(4) of a sandbox with a 10",
      "               MB workspace and a Python session holding 100 MB of objects,",
      "               with spare copies ready (prepareForks) and once without ('fork,",
      "               no spares')",
      "  artifacts    only with --only artifacts: export of 100 files (10 MB in all)",
      "               to a host directory, and upload of the same directory (MB/s from",
      "               the p50)",
      "  snapshot     only with --only snapshot: save and restore of a sandbox with a",
      "               10 MB workspace and a session holding 10 MB, in a temporary",
      "               AGENTNEST_HOME",
      "  audit        only with --only audit: write 1,000,000 audit events (events/s),",
      "               then query latency (ms) over them, in a temporary directory",
      "  tenant-fill  only with --only tenant-fill --backend kubernetes: start",
      "               --tenant-sandboxes sandboxes (4 at a time) in one tenant, each",
      "               to a first Python result, keep them all, then one more, which",
      "               the tenant's pod quota must refuse",
      "  pool         only with --only pool: from a warm pool (SandboxPool, min_idle",
      "               2), acquire ('pool acquire') and acquire + first Python result",
      "               ('pool acquire+first result'); between samples the pool refills",
      "               and settles (1.5 s), outside the measured time; then a neighbour",
      "               sandbox's session calls while the pool is full and while another",
      "               thread takes and returns pooled sandboxes back to back ('pool",
      "               neighbour call, pool full' / '..., refilling')",
      "  density      only with --only density: start --density-sandboxes idle",
      "               sandboxes (4 at a time, each to a first Python result), then",
      "               report the host JVM's RSS, heap and threads before and after,",
      "               each sandbox's memory as its cgroup counts it, and a warm",
      "               session call on one more sandbox while they all idle (after 10 s",
      "               for the engine to settle, unmeasured)",
      "  server       only with --only server: a warm session call in-process and",
      "               through an in-process `agentnest serve` on loopback (temporary",
      "               AGENTNEST_HOME), then --server-clients clients looping calls for",
      "               --server-seconds (errors, p99)",
      "  e2b          only with --only e2b: through the E2B face of an in-process",
      "               server, as the E2B SDKs call it: create to first code result,",
      "               warm runCode and commands.run('true'), beside the same calls in-",
      "               process",
      "  expose       only with --only expose: a 64-byte echo through Sandbox.expose",
      "               against the same Python echo server on the host's loopback, on a",
      "               kept connection and with a connection per request (needs python3",
      "               on the host)",
      "  browser      only with --only browser: Sandbox.browser() to the PNG of a",
      "               simple page (a data: URL), in a sandbox of the browser preset",
      "               (its image built first)"
    })
final class BenchCommand implements Callable<Integer> {
  @Option(
      names = {"-n", "--iterations"},
      description = "Measured iterations per operation (default: ${DEFAULT-VALUE}).",
      defaultValue = "50")
  int iterations = 50;

  @Option(
      names = "--warmup",
      description = "Unmeasured warm-up iterations (default: ${DEFAULT-VALUE}).",
      defaultValue = "5")
  int warmup = 5;

  @Option(
      names = "--cold-iterations",
      description = "Iterations of cold start (default: ${DEFAULT-VALUE}).",
      defaultValue = "20")
  int coldIterations = 20;

  @Option(
      names = "--tenant-sandboxes",
      description = "Sandboxes of --only tenant-fill (default: ${DEFAULT-VALUE}).",
      defaultValue = "50")
  int tenantSandboxes = 50;

  @Option(
      names = "--density-sandboxes",
      description = "Idle sandboxes of --only density (default: ${DEFAULT-VALUE}).",
      defaultValue = "200")
  int densitySandboxes = 200;

  @Option(
      names = "--server-clients",
      description = "Concurrent clients of --only server (default: ${DEFAULT-VALUE}).",
      defaultValue = "50")
  int serverClients = 50;

  @Option(
      names = "--server-seconds",
      description = "How long each --only server client loops calls (default: ${DEFAULT-VALUE}).",
      defaultValue = "20")
  int serverSeconds = 20;

  @Option(
      names = "--server-pause-ms",
      description =
          "Pause of each --only server client between calls; 0 loops back to back"
              + " (default: ${DEFAULT-VALUE}).",
      defaultValue = "0")
  int serverPauseMillis = 0;

  @Option(
      names = "--server-idle",
      description =
          "Idle sandboxes --only server makes through the server to report its memory with them"
              + " (default: ${DEFAULT-VALUE}: none).",
      defaultValue = "0")
  int serverIdle = 0;

  @Option(names = "--only", split = ",", description = "Run only these operations.")
  List<String> only = new ArrayList<>();

  @Option(
      names = "--trace",
      description =
          "With cold-start: time each step of a start too (policy, engine create, attach, start,"
              + " agent ready, hello, ...), one row per step; with pool: each step of a hand-out.")
  boolean trace;

  @Option(names = "--json", description = "Print results as JSON.")
  boolean json;

  @Mixin SandboxOptions sandbox = new SandboxOptions();

  @Override
  public Integer call() {
    if (iterations < 1
        || coldIterations < 1
        || warmup < 0
        || tenantSandboxes < 1
        || densitySandboxes < 1) {
      throw new ConfigException(
          "iterations, --cold-iterations, --tenant-sandboxes and --density-sandboxes must be >= 1,"
              + " and --warmup >= 0");
    }
    SandboxConfig config = sandbox.toConfig();
    BenchSteps steps = new BenchSteps();
    PrintStream info = json ? System.err : System.out;
    if (want("cold-start")) {
      steps.run(
          "cold-start",
          samples -> {
            samples.put(
                "cold-start",
                BenchSteps.measure(
                    "cold-start",
                    coldIterations,
                    Math.min(warmup, 2),
                    () -> {
                      try (Sandbox sb = Sandbox.create(config)) {
                        check(sb.runCode("1 + 1"), "2");
                      }
                    }));
            if (trace) {
              samples.putAll(ColdStartTrace.run(config, coldIterations));
            }
          });
    }
    boolean warmOps = Stream.of("exec", "session", "file-1mib", "first-byte").anyMatch(this::want);
    if (warmOps) {
      steps.run("warm operations", samples -> warm(config, samples));
    }
    if (only.contains("fork")) {
      steps.run("fork", samples -> StateBench.fork(config, iterations, warmup, info, samples));
    }
    if (only.contains("snapshot")) {
      steps.run(
          "snapshot", samples -> StateBench.snapshot(config, iterations, warmup, info, samples));
    }
    if (only.contains("artifacts")) {
      steps.run("artifacts", samples -> StateBench.artifacts(config, iterations, warmup, samples));
    }
    if (want("approvals")) {
      steps.run("approvals", samples -> approvals(config, samples));
    }
    if (want("egress")) {
      steps.run("egress", samples -> runShipped("egress", iterations, samples));
    }
    if (only.contains("audit")) {
      steps.run("audit", samples -> runShipped("audit", iterations, samples));
    }
    if (only.contains("egress-intercept")) {
      steps.run("egress-intercept", samples -> runShipped("egress-intercept", iterations, samples));
    }
    if (only.contains("tenant-fill")) {
      steps.run("tenant-fill", samples -> TenantFillBench.run(config, tenantSandboxes, samples));
    }
    if (only.contains("pool")) {
      steps.run("pool", samples -> PoolBench.run(config, iterations, warmup, trace, samples));
    }
    if (only.contains("density")) {
      steps.run(
          "density",
          samples -> DensityBench.run(config, densitySandboxes, iterations, warmup, samples, info));
    }
    if (only.contains("server")) {
      steps.run(
          "server",
          samples ->
              ServerBench.run(
                  config,
                  iterations,
                  warmup,
                  new ServerBench.Load(serverClients, serverSeconds, serverPauseMillis, serverIdle),
                  samples,
                  info));
    }
    if (only.contains("e2b")) {
      steps.run("e2b", samples -> E2bBench.run(config, iterations, warmup, samples, info));
    }
    if (only.contains("browser")) {
      steps.run(
          "browser",
          samples ->
              BrowserBench.run(config, Math.max(5, iterations / 5), Math.min(warmup, 2), samples));
    }
    if (only.contains("expose")) {
      steps.run("expose", samples -> ExposeBench.run(config, iterations, warmup, samples));
    }
    if (want("redaction")) {
      steps.run("redaction", samples -> runShipped("redaction", iterations, samples));
    }
    Map<String, double[]> samples = steps.samples();
    List<BenchReport.Stat> stats = new ArrayList<>();
    samples.forEach((op, s) -> stats.add(BenchReport.stat(op, s)));
    BenchReport.print(
        System.out,
        stats,
        config.backend(),
        config.image(),
        config.runtime() != null
            ? config.runtime()
            : config.backend().equals(SandboxConfig.MICROVM) ? SandboxConfig.MICROVM : "runc",
        Runtime.getRuntime().availableProcessors(),
        json);
    steps.reportFailures(System.err);
    return steps.exitCode();
  }

  /**
   * Runs a benchmark that a module ships behind the {@link Benchmark} SPI (core's internal ones),
   * so the CLI reaches them without importing internal classes.
   */
  private static void runShipped(String name, int iterations, Map<String, double[]> samples) {
    Benchmark b =
        ServiceLoader.load(Benchmark.class, BenchCommand.class.getClassLoader()).stream()
            .map(ServiceLoader.Provider::get)
            .filter(x -> x.name().equals(name))
            .findFirst()
            .orElseThrow(
                () ->
                    new AgentNestException(
                        "no '"
                            + name
                            + "' benchmark on the class path: run the agentnest CLI jar, which"
                            + " bundles agentnest-core"));
    try {
      b.run(iterations).forEach((k, v) -> samples.put(k.isEmpty() ? name : name + " " + k, v));
    } catch (IOException ex) {
      throw new AgentNestException(name + " benchmark failed: " + ex.getMessage(), ex);
    }
  }

  /** The sandbox prints its wall clock; the listener compares it with ours on arrival. */
  private static double[] firstByte(Sandbox sb, int n) {
    List<Double> deltas = new ArrayList<>();
    String code =
        "import time, sys\nfor i in range("
            + n
            + "):\n"
            + "    sys.stdout.write('%d\\n' % time.time_ns()); sys.stdout.flush(); time.sleep(0.01)\n";
    StringBuilder partial = new StringBuilder();
    sb.runCode(
        code,
        ExecOptions.builder()
            .onOutput(
                c -> {
                  Instant now = Instant.now();
                  long nowNs = now.getEpochSecond() * 1_000_000_000L + now.getNano();
                  partial.append(c.text());
                  int nl;
                  while ((nl = partial.indexOf("\n")) >= 0) {
                    String line = partial.substring(0, nl).strip();
                    partial.delete(0, nl + 1);
                    if (line.matches("[0-9]{10,25}")) {
                      deltas.add((nowNs - Long.parseLong(line)) / 1e6);
                    }
                  }
                })
            .build());
    return deltas.stream().mapToDouble(Double::doubleValue).toArray();
  }

  /** The cost of approvals: the hook on ordinary code, and one approved question end to end. */
  private void approvals(SandboxConfig config, Map<String, double[]> samples) {
    // Each of python-ask and shell-ask asks once per iteration, warm-up included.
    int questions = 2 * (iterations + warmup);
    SandboxConfig guarded =
        config.toBuilder()
            .approvals(ApprovalPolicy.recommended())
            .approvalHandler(ApprovalHandler.allowAll())
            .budgets(BenchSteps.approvalsBudget(config.budgets(), questions))
            .build();
    try (Sandbox sb = Sandbox.create(guarded)) {
      samples.put(
          "approvals hooked-session",
          BenchSteps.measure(
              "approvals hooked-session",
              iterations,
              warmup,
              () -> check(sb.runCode("x = 1"), null)));
      sb.runCode("import os");
      samples.put(
          "approvals python-ask",
          BenchSteps.measure(
              "approvals python-ask",
              iterations,
              warmup,
              () -> check(sb.runCode("open('b', 'w').close(); os.remove('b')"), null)));
      samples.put(
          "approvals shell-ask",
          BenchSteps.measure(
              "approvals shell-ask",
              iterations,
              warmup,
              () -> {
                ExecResult r = sb.exec("rm -f /tmp/none");
                if (r.exitCode() != 0) {
                  throw new AgentNestException(
                      "approved rm failed: " + BenchSteps.describe(r, null));
                }
              }));
    }
  }

  /** The operations that need one warm sandbox, measured on the same one. */
  private void warm(SandboxConfig config, Map<String, double[]> samples) {
    try (Sandbox sb = Sandbox.create(config)) {
      if (want("exec")) {
        samples.put(
            "exec",
            BenchSteps.measure(
                "exec",
                iterations,
                warmup,
                () -> {
                  ExecResult r = sb.exec("true");
                  if (r.exitCode() != 0) {
                    throw new AgentNestException("exec failed: " + BenchSteps.describe(r, null));
                  }
                }));
      }
      if (want("session")) {
        samples.put(
            "session",
            BenchSteps.measure(
                "session", iterations, warmup, () -> check(sb.runCode("x = 1"), null)));
      }
      if (want("file-1mib")) {
        byte[] data = new byte[1 << 20];
        new Random(42).nextBytes(data);
        samples.put(
            "file-1mib",
            BenchSteps.measure(
                "file-1mib",
                iterations,
                warmup,
                () -> {
                  sb.files().write("bench.bin", data);
                  if (!Arrays.equals(sb.files().read("bench.bin"), data)) {
                    throw new AgentNestException("file round trip corrupted data");
                  }
                }));
      }
      if (want("first-byte")) {
        samples.put("first-byte", firstByte(sb, iterations));
      }
    }
  }

  private boolean want(String op) {
    return only.isEmpty() || only.contains(op);
  }

  static void check(ExecResult r, @Nullable String expected) {
    BenchSteps.check(r, expected);
  }
}
