package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.Backends;
import io.agentnest.internal.Json;
import io.agentnest.spi.HealthCheck;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Checks the host and prints a fix for everything that is wrong. */
@Command(
    name = "doctor",
    mixinStandardHelpOptions = true,
    description =
        "Checks that this host can run sandboxes: Docker engine and version, runtimes (runc,"
            + " runsc), base image, cgroups, seccomp, disk space, and a real sandbox start."
            + " Exits 1 when a check fails.")
final class DoctorCommand implements Callable<Integer> {
  @Option(names = "--json", description = "Print the checks as a JSON array.")
  boolean json;

  @Option(names = "--no-sandbox", description = "Skip starting a test sandbox.")
  boolean noSandbox;

  @Override
  public Integer call() {
    List<HealthCheck> checks = new ArrayList<>();
    int feature = Runtime.version().feature();
    checks.add(
        feature >= 17
            ? HealthCheck.ok("java", "Java " + Runtime.version())
            : HealthCheck.fail("java", "Java " + Runtime.version(), "install Java 17 or newer"));
    checks.addAll(Backends.get("docker").diagnose());
    boolean failed = checks.stream().anyMatch(c -> c.status() == HealthCheck.Status.FAIL);
    if (!failed && !noSandbox) {
      checks.add(smokeTest());
    }
    failed = checks.stream().anyMatch(c -> c.status() == HealthCheck.Status.FAIL);
    if (json) {
      ArrayNode arr = Json.MAPPER.createArrayNode();
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
    return failed ? ExitCodes.FAILED : ExitCodes.OK;
  }

  private static HealthCheck smokeTest() {
    long t0 = System.nanoTime();
    try (Sandbox sb = Sandbox.create(SandboxConfig.defaults())) {
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
