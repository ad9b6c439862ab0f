package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.kubernetes.KubernetesClusterRequired;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged CLI ({@code target/agentnest.jar}) on the real test cluster, as a user runs it:
 * doctor, run, ls, rm and prune with {@code --backend kubernetes}, the cluster settings from a
 * configuration file's {@code kubernetes:} block. Its own namespace prefix ({@code ancli-}) keeps
 * ls, rm and prune to the namespace this test creates (and deletes at the end).
 */
@ExtendWith(KubernetesClusterRequired.class)
class KubernetesCliIT {
  static final String PREFIX = "ancli-";
  static final String TENANT = "cli-it";
  static final String NAMESPACE = PREFIX + TENANT;
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir static Path dir;
  static Path config;
  static String kubeconfig;

  record Run(int exit, String out, String err) {}

  @BeforeAll
  static void writeConfig() throws IOException {
    String env = System.getenv("KUBECONFIG");
    kubeconfig = env != null ? env : System.getProperty("kubeconfig");
    config = dir.resolve("agentnest.yaml");
    Files.writeString(
        config,
        """
        version: 1
        defaults:
          backend: kubernetes
          kubernetes:
            namespace_prefix: %s
            tenant: %s
            quota: { pods: 10, cpu: "4", memory: 4Gi }
        """
            .formatted(PREFIX, TENANT));
  }

  @AfterAll
  static void deleteTheNamespace() {
    if (kubeconfig == null) {
      return;
    }
    System.setProperty("kubeconfig", kubeconfig);
    try (KubernetesClient c =
        new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build()) {
      c.namespaces().withName(NAMESPACE).delete();
    }
  }

  static ProcessBuilder command(String... args) {
    Path jar = Path.of("target", "agentnest.jar");
    assertThat(jar).as("package phase builds the CLI jar").exists();
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-jar");
    cmd.add(jar.toString());
    cmd.addAll(List.of(args));
    cmd.add("--config");
    cmd.add(config.toString());
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("KUBECONFIG", kubeconfig);
    // Only the file chooses: no tenant or backend from the test's environment. The home stays a
    // temporary one: the real ~/.agentnest is never touched by a test.
    pb.environment().keySet().removeIf(k -> k.startsWith("AGENTNEST_"));
    pb.environment().put("AGENTNEST_HOME", dir.resolve("home").toString());
    return pb;
  }

  /** Runs the CLI to its end (at most 5 minutes), its output bounded by the files' readers. */
  static Run cli(String... args) throws IOException, InterruptedException {
    return cli(Map.of(), args);
  }

  /** {@link #cli(String...)} with {@code env} added to the CLI's environment. */
  static Run cli(Map<String, String> env, String... args) throws IOException, InterruptedException {
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    ProcessBuilder pb = command(args);
    pb.environment().putAll(env);
    Process p =
        pb.redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    if (!p.waitFor(5, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError("agentnest " + String.join(" ", args) + " did not finish");
    }
    return new Run(p.exitValue(), head(out), head(err));
  }

  private static String head(Path f) throws IOException {
    byte[] b = Files.readAllBytes(f);
    return new String(b, 0, Math.min(b.length, 1 << 20), StandardCharsets.UTF_8);
  }

  /** A {@code run} that keeps its sandbox busy until it is removed or the CLI is killed. */
  static Process sleeper() throws IOException {
    return command(
            "run",
            "--backend",
            "kubernetes",
            "--timeout",
            "5m",
            "-c",
            "import time; time.sleep(280)")
        .redirectOutput(dir.resolve("sleeper.out").toFile())
        .redirectError(dir.resolve("sleeper.err").toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .start();
  }

  static JsonNode ls() throws Exception {
    Run r = cli("ls", "--backend", "kubernetes", "--json");
    assertThat(r.exit()).as(r.err()).isZero();
    JsonNode arr = JSON.readTree(r.out());
    assertThat(arr.isArray()).as(r.out()).isTrue();
    return arr;
  }

  /** The id of the sandbox the sleeper made, once ls shows it (at most 4 minutes). */
  static String awaitSandbox(Process sleeper, List<String> known) throws Exception {
    Instant deadline = Instant.now().plus(Duration.ofMinutes(4));
    while (Instant.now().isBefore(deadline)) {
      for (JsonNode s : ls()) {
        String id = s.get("id").asText();
        if (!known.contains(id) && s.get("state").asText().equals("running")) {
          assertThat(s.get("backend").asText()).isEqualTo("kubernetes");
          assertThat(s.get("tenant").asText()).isEqualTo(TENANT);
          return id;
        }
      }
      assertThat(sleeper.isAlive())
          .as("run ended before its sandbox was listed: " + sleeperErr())
          .isTrue();
      Thread.sleep(2000);
    }
    throw new AssertionError("ls never showed the sandbox of run: " + sleeperErr());
  }

  private static String sleeperErr() {
    try {
      return head(dir.resolve("sleeper.err"));
    } catch (IOException e) {
      return e.toString();
    }
  }

  static List<String> ids(JsonNode arr) {
    List<String> ids = new ArrayList<>();
    arr.forEach(s -> ids.add(s.get("id").asText()));
    return ids;
  }

  @Test
  void doctorChecksTheClusterAndStartsASandboxPod() throws Exception {
    Run r = cli("doctor", "--backend", "kubernetes", "--json");
    JsonNode checks = JSON.readTree(r.out());
    assertThat(r.exit()).as(r.out() + r.err()).isZero();
    List<String> names = new ArrayList<>();
    checks.forEach(c -> names.add(c.get("check").asText()));
    assertThat(names)
        .contains(
            "kubernetes api",
            "kubernetes rbac",
            "kubernetes runtime classes",
            "kubernetes quota",
            "kubernetes network isolation",
            "sandbox start");
    assertThat(status(checks, "kubernetes rbac")).contains(NAMESPACE);
    assertThat(status(checks, "kubernetes network isolation")).startsWith("OK");
    assertThat(status(checks, "sandbox start")).startsWith("OK");
  }

  private static String status(JsonNode checks, String name) {
    for (JsonNode c : checks) {
      if (c.get("check").asText().equals(name)) {
        return c.get("status").asText() + " " + c.get("detail").asText();
      }
    }
    return "missing";
  }

  @Test
  void doctorEscapesAttacksSandboxPodsAndReportsEachProbe() throws Exception {
    // As the test cluster's administrator runs it: AgentNest's profile on the node, the test
    // cluster's engine roots (its containerd and kubelet live under /var/lib/agentnest-k8s).
    Run r =
        cli(
            Map.of("AGENTNEST_KUBERNETES_SECCOMP_PROFILE", "agentnest.json"),
            "doctor",
            "--escapes",
            "--backend",
            "kubernetes",
            "--runtime",
            "runc",
            "--only",
            "privilege.agent-memory,kernel.io-uring,host-info.mountinfo",
            "--engine-root",
            "/var/lib/agentnest-k8s/containerd/root,/var/lib/agentnest-k8s/kubelet",
            "--json");
    assertThat(r.exit()).as(r.out() + r.err()).isZero();
    JsonNode results = JSON.readTree(r.out());
    List<String> seen = new ArrayList<>();
    for (JsonNode res : results) {
      seen.add(res.path("probe").asText() + " " + res.path("outcome").asText());
    }
    assertThat(seen)
        .containsExactlyInAnyOrder(
            "privilege.agent-memory BLOCKED",
            "kernel.io-uring BLOCKED",
            "host-info.mountinfo BLOCKED");
  }

  @Test
  void runPrintsTheResultOfCodeInASandboxPod() throws Exception {
    Run r = cli("run", "--backend", "kubernetes", "-c", "a = 10; print(a * 2)");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("20\n");
  }

  /**
   * A gVisor pod the way the docs tell a user to run one on the test cluster: no seccomp setting
   * (the runtime's default profile), no pids setting and no waiver (gVisor's kernel holds the pod
   * to its pids limit).
   */
  @Test
  void runOnTheGvisorRuntimeClassPrintsTheResultAsAUserRunsIt() throws Exception {
    Run r =
        cli(
            Map.of(),
            "run",
            "--backend",
            "kubernetes",
            "--runtime",
            "gvisor",
            "-c",
            "import threading; print(6 * 7, threading.active_count())");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).contains("42 1");
  }

  /**
   * The same run through SIG Apps' Sandbox objects, which the cluster's controller makes pods of.
   */
  @Test
  void runThroughTheAgentSandboxApiPrintsTheResult() throws Exception {
    Run r =
        cli(
            Map.of("AGENTNEST_KUBERNETES_API", "agent-sandbox"),
            "run",
            "--backend",
            "kubernetes",
            "-c",
            "print(6 * 7)");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).isEqualTo("42\n");
  }

  @Test
  void lsShowsARunsSandboxAndRmDestroysIt() throws Exception {
    List<String> before = ids(ls());
    Process sleeper = sleeper();
    try {
      String id = awaitSandbox(sleeper, before);

      Run rm = cli("rm", "--backend", "kubernetes", id);
      assertThat(rm.exit()).as(rm.err()).isZero();
      assertThat(rm.out()).startsWith("removed " + id.substring(0, Math.min(12, id.length())));
      assertThat(ids(ls())).doesNotContain(id);
      assertThat(sleeper.waitFor(2, TimeUnit.MINUTES)).as("run ends with its sandbox").isTrue();
      assertThat(sleeper.exitValue()).isNotZero();

      Run again = cli("rm", "--backend", "kubernetes", id);
      assertThat(again.exit()).isEqualTo(ExitCodes.NOT_FOUND);
    } finally {
      sleeper.destroyForcibly();
    }
  }

  @Test
  void pruneRemovesTheSandboxOfAKilledCli() throws Exception {
    List<String> before = ids(ls());
    Process sleeper = sleeper();
    String id;
    try {
      id = awaitSandbox(sleeper, before);
    } finally {
      sleeper.destroyForcibly();
    }
    assertThat(sleeper.waitFor(1, TimeUnit.MINUTES)).isTrue();
    assertThat(ids(ls())).as("a killed CLI leaves its pod").contains(id);

    Run dry = cli("prune", "--backend", "kubernetes", "--dry-run", "--json");
    assertThat(dry.exit()).as(dry.err()).isZero();
    Optional<JsonNode> planned = item(JSON.readTree(dry.out()), id);
    assertThat(planned).as(dry.out()).isPresent();
    assertThat(planned.get().get("reason").asText()).contains("owner process");
    assertThat(ids(ls())).contains(id);

    Run prune = cli("prune", "--backend", "kubernetes", "--json");
    assertThat(prune.exit()).as(prune.out() + prune.err()).isZero();
    Optional<JsonNode> removed = item(JSON.readTree(prune.out()), id);
    assertThat(removed).as(prune.out()).isPresent();
    assertThat(removed.get().get("removed").asBoolean()).isTrue();
    assertThat(ids(ls())).doesNotContain(id);
  }

  private static Optional<JsonNode> item(JsonNode report, String id) {
    for (JsonNode i : report.get("items")) {
      if (i.get("id").asText().equals(id)) {
        return Optional.of(i);
      }
    }
    return Optional.empty();
  }
}
