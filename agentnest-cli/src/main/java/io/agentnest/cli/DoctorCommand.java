package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.escapes.EscapeReport;
import io.agentnest.escapes.EscapeSuite;
import io.agentnest.escapes.Probe;
import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.AgentNestHome;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Checks the host and prints a fix for everything that is wrong. */
@Command(
    name = "doctor",
    mixinStandardHelpOptions = true,
    description = {
      "Checks that this host can run sandboxes: Docker engine and version, runtimes (runc,"
          + " runsc), base image, cgroups, seccomp, disk space, and a real sandbox start."
          + " Exits 1 when a check fails. With --escapes, also runs the escape-attack suite"
          + " (every probe --escapes --list shows) on runc and, when registered, gVisor, and"
          + " prints what each"
          + " attack achieved; exits 1 when any got through.",
      "With --backend kubernetes it checks the cluster instead: API access, RBAC in the tenant's"
          + " namespace, RuntimeClasses, the seccomp profile, the tenant's quota, and whether the"
          + " cluster enforces network isolation (a canary pod tries to reach another), then"
          + " starts a sandbox pod.",
      "  agentnest doctor",
      "  agentnest doctor --backend kubernetes --json"
    })
final class DoctorCommand implements Callable<Integer> {
  @Option(names = "--json", description = "Print the checks as a JSON array.")
  boolean json;

  @Option(names = "--no-sandbox", description = "Skip starting a test sandbox.")
  boolean noSandbox;

  @Option(
      names = "--escapes",
      description =
          "Run the escape-attack suite against real sandboxes on this host and print a table"
              + " (probe, backend, outcome).")
  boolean escapes;

  @Option(
      names = "--runtime",
      split = ",",
      paramLabel = "NAME",
      description =
          "With --escapes: runtimes to attack (runc, gvisor, or any registered in Docker or as"
              + " a RuntimeClass, e.g. kata-runtime). Default: runc, and gvisor when runsc is"
              + " registered (a gvisor RuntimeClass on kubernetes).")
  List<String> runtimes = new ArrayList<>();

  @Option(
      names = "--only",
      split = ",",
      paramLabel = "PROBE",
      description =
          "With --escapes: only these categories or probe ids (e.g. kernel,files.tar-slip).")
  List<String> only = new ArrayList<>();

  @Option(
      names = "--engine-root",
      split = ",",
      paramLabel = "DIR",
      description =
          "With --escapes: host directories of the engine itself (its images and per-container"
              + " files), which a sandbox's mount table may name without leaking user data."
              + " Default: /var/lib/docker for docker; /var/lib/kubelet and /var/lib/containerd"
              + " for kubernetes.")
  List<String> engineRoots = new ArrayList<>();

  /** Backends the escape suite can attack, and their engines' usual roots on the host. */
  private static final Map<String, List<String>> ESCAPE_ROOTS =
      Map.of(
          "docker",
          List.of("/var/lib/docker"),
          "kubernetes",
          List.of("/var/lib/kubelet", "/var/lib/containerd"),
          // Where the guests' disks and sockets are: no path under it may show in a guest.
          "microvm",
          List.of(AgentNestHome.dir().resolve("microvm").toAbsolutePath().toString()));

  @Option(
      names = "--image",
      paramLabel = "IMAGE",
      description =
          "With --escapes: attack sandboxes of this image instead of the default one, e.g. the"
              + " browser preset's agentnest/python:browser for the browser probe, or an image"
              + " with git for the git probes.")
  @Nullable String image;

  @Option(names = "--list", description = "With --escapes: list the probes and exit.")
  boolean list;

  @Mixin BackendOptions target = new BackendOptions();

  @Override
  public Integer call() {
    if (!escapes) {
      List<String> given = new ArrayList<>();
      if (list) {
        given.add("--list");
      }
      if (image != null) {
        given.add("--image");
      }
      if (!only.isEmpty()) {
        given.add("--only");
      }
      if (!runtimes.isEmpty()) {
        given.add("--runtime");
      }
      if (!engineRoots.isEmpty()) {
        given.add("--engine-root");
      }
      if (!given.isEmpty()) {
        System.err.println(
            "error: "
                + String.join(", ", given)
                + " only applies to the escape-attack suite; add --escapes (e.g. agentnest doctor"
                + " --escapes "
                + given.get(0)
                + " ...)");
        return ExitCodes.USAGE;
      }
    }
    if (escapes && list) {
      for (Probe p : EscapeSuite.probes()) {
        System.out.printf("%-34s %s%n", p.id(), p.attack());
      }
      return ExitCodes.OK;
    }
    String name = target.name();
    if (escapes && !ESCAPE_ROOTS.containsKey(name)) {
      System.err.println(
          "error: --escapes attacks sandboxes on "
              + String.join(" or ", ESCAPE_ROOTS.keySet())
              + " only, not '"
              + name
              + "'; drop --escapes or use --backend docker");
      return ExitCodes.USAGE;
    }
    RuntimeBackend backend = target.open(name);
    List<HealthCheck> checks = new ArrayList<>();
    int feature = Runtime.version().feature();
    checks.add(
        feature >= 17
            ? HealthCheck.ok("java", "Java " + Runtime.version())
            : HealthCheck.fail("java", "Java " + Runtime.version(), "install Java 17 or newer"));
    checks.addAll(backend.diagnose());
    boolean failed = checks.stream().anyMatch(c -> c.status() == HealthCheck.Status.FAIL);
    if (!failed && !noSandbox) {
      checks.add(smokeTest(name));
    }
    failed = checks.stream().anyMatch(c -> c.status() == HealthCheck.Status.FAIL);
    if (escapes) {
      if (failed) {
        System.err.println("error: the host checks fail; fix them before --escapes");
        printChecks(checks, failed);
        return ExitCodes.FAILED;
      }
      return runEscapes(name, checks);
    }
    printChecks(checks, failed);
    return failed ? ExitCodes.FAILED : ExitCodes.OK;
  }

  private int runEscapes(String backend, List<HealthCheck> checks) {
    List<String> targets = new ArrayList<>(runtimes);
    if (targets.isEmpty() && backend.equals(SandboxConfig.MICROVM)) {
      targets.add(SandboxConfig.MICROVM);
    }
    if (targets.isEmpty()) {
      targets.add("runc");
      if (hasGvisor(backend, checks)) {
        targets.add("gvisor");
      } else {
        System.err.println(
            backend.equals("kubernetes")
                ? "warning: the cluster has no gvisor RuntimeClass: attacking runc pods only;"
                    + " docs/kubernetes.md says how to add one"
                : "warning: gVisor (runsc) is not registered in Docker: attacking runc only;"
                    + " 'agentnest doctor' prints the daemon.json snippet to add it");
      }
    }
    List<String> roots =
        engineRoots.isEmpty() ? ESCAPE_ROOTS.getOrDefault(backend, List.of()) : engineRoots;
    EscapeReport report = new EscapeReport(List.of());
    int total = EscapeSuite.builder().only(only).build().selected().size() * targets.size();
    try (ProgressBar pb = Progress.bar("escapes", total)) {
      for (String rt : targets) {
        EscapeSuite suite =
            EscapeSuite.builder()
                .base(base(backend))
                .runtime(rt)
                .engineRoots(roots)
                .only(only)
                .onResult(
                    r -> {
                      pb.step();
                      pb.setExtraMessage(r.backend() + " " + r.probe());
                    })
                .build();
        report = report.plus(suite.run());
      }
    }
    if (json) {
      System.out.println(report.toJson());
    } else {
      System.out.print(report.table(100));
    }
    return report.passed() ? ExitCodes.OK : ExitCodes.FAILED;
  }

  private SandboxConfig base(String backend) {
    SandboxConfig.Builder b = SandboxConfig.builder().backend(backend);
    if (image != null) {
      b.image(image);
    }
    return b.build();
  }

  private static boolean hasGvisor(String backend, List<HealthCheck> checks) {
    return checks.stream()
        .filter(c -> c.status() == HealthCheck.Status.OK)
        .anyMatch(
            c ->
                backend.equals("kubernetes")
                    ? c.name().equals("kubernetes runtime classes")
                        && List.of(c.detail().split(",\\s*")).contains("gvisor")
                    : c.name().startsWith("runtime runsc"));
  }

  private void printChecks(List<HealthCheck> checks, boolean failed) {
    if (json) {
      ArrayNode arr = CliJson.MAPPER.createArrayNode();
      for (HealthCheck c : checks) {
        ObjectNode o = arr.addObject();
        o.put("check", c.name()).put("status", c.status().name()).put("detail", c.detail());
        o.put("fix", c.fix());
      }
      System.out.println(arr);
    } else {
      for (HealthCheck c : checks) {
        String mark =
            switch (c.status()) {
              case OK -> "[ ok ]";
              case WARN -> "[warn]";
              case FAIL -> "[FAIL]";
            };
        System.out.printf("%s %-24s %s%n", mark, c.name(), c.detail());
        if (!c.fix().isEmpty()) {
          System.out.printf("       %-24s fix: %s%n", "", c.fix());
        }
      }
      System.out.println(failed ? "\nsome checks failed" : "\nall required checks passed");
    }
  }

  private static HealthCheck smokeTest(String backend) {
    long t0 = System.nanoTime();
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().backend(backend).build())) {
      ExecResult py = sb.runCode("1 + 1");
      ExecResult id = sb.exec("id -u");
      long ms = (System.nanoTime() - t0) / 1_000_000;
      if (!"2".equals(py.result()) || !id.stdout().strip().equals("65534")) {
        return HealthCheck.fail(
            "sandbox start",
            "unexpected results: python=" + py.result() + " uid=" + id.stdout().strip(),
            "report this with 'agentnest doctor --json'");
      }
      return HealthCheck.ok(
          "sandbox start", "created, ran Python and shell as uid 65534 in " + ms + " ms");
    } catch (AgentNestException e) {
      return HealthCheck.fail(
          "sandbox start", String.valueOf(e.getMessage()), "fix the checks above first");
    }
  }
}
