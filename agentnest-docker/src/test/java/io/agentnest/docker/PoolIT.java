package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.PoolExhaustedException;
import io.agentnest.PoolOptions;
import io.agentnest.PoolOptions.Exhaustion;
import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm pools on the real engine (runc; {@link GvisorPoolIT} runs them on runsc): a pooled sandbox
 * is a fresh one with its user's secrets, environment and TTL, no user's leftovers reach the next,
 * exhaustion, refill after a crash, close and prune of a killed host's members.
 */
@ExtendWith(DockerEngineRequired.class)
class PoolIT {
  static final String SECRET = "pool-secret-" + Long.toHexString(System.nanoTime());

  @TempDir static Path home;
  static TestHome isolated;
  static AuditLog audit;
  static String runtime = "runc";

  private final List<SandboxPool> pools = new ArrayList<>();

  @BeforeAll
  static void isolateHostState() {
    isolated = TestHome.use(home);
    // Each class its own log: the process-wide one stays bound to the first test home it saw.
    audit = AuditLog.open(home.resolve("audit"));
  }

  @AfterAll
  static void restore() {
    audit.close();
    isolated.close();
  }

  @AfterEach
  void closePools() {
    pools.forEach(SandboxPool::close);
    pools.clear();
  }

  SandboxConfig template() {
    return SandboxConfig.builder()
        .runtime(runtime)
        .label("test", "pool-it")
        .auditLog(audit)
        .build();
  }

  SandboxPool start(String name, PoolOptions.Builder options) {
    SandboxPool p = SandboxPool.start(template(), options.name(name + "-" + runtime).build());
    pools.add(p);
    return p;
  }

  static void awaitIdle(SandboxPool p, int n) {
    await().atMost(Duration.ofSeconds(60)).until(() -> p.stats().idle() >= n);
  }

  static List<String> members(String pool) {
    return Backends.get("docker").list().stream()
        .filter(i -> pool.equals(i.labels().get(Labels.POOL)))
        .map(SandboxInfo::id)
        .toList();
  }

  @Test
  void aPooledSandboxGetsItsUsersSecretEnvironmentTtlAndAuditAtHandOut() throws Exception {
    SandboxPool p = start("handout", PoolOptions.builder().minIdle(1));
    awaitIdle(p, 1);
    String idle = members(p.name()).get(0);
    SandboxInfo info = Backends.get("docker").inspect(idle).orElseThrow();
    assertThat(SandboxPool.isIdleMember(info)).isTrue();
    assertThat(EngineFiles.inspect(idle)).doesNotContain(SECRET, "MODE=");

    try (AuditLog log = AuditLog.open(home.resolve("audit-handout-" + runtime));
        Sandbox sb =
            Sandbox.create(
                template().toBuilder()
                    .auditLog(log)
                    .env("MODE", "pooled")
                    .secretEnv("TOKEN", Secret.of(SECRET))
                    .ttl(Duration.ofMinutes(3))
                    .build())) {
      assertThat(sb.id()).isEqualTo(idle);
      assertThat(p.stats().acquired()).isEqualTo(1);
      // Secrets and env reach every process; the redactor knows the secret.
      assertThat(sb.exec("echo \"$MODE $TOKEN\"").stdout()).isEqualTo("pooled [REDACTED:TOKEN]\n");
      assertThat(sb.runCode("import os; os.environ['TOKEN'] == '" + SECRET + "'").result())
          .isEqualTo("True");
      // The engine never saw either: they came over the channel at hand-out.
      assertThat(EngineFiles.inspect(sb.id())).doesNotContain(SECRET, "MODE=");
      // Its TTL starts at hand-out, host-side, and in the host state a moment later (written
      // off the user's first calls), never the idle label's.
      Instant expected = Instant.now().plus(Duration.ofMinutes(3));
      assertThat(sb.expiresAt()).isBetween(expected.minusSeconds(30), expected);
      HostState.Entry state =
          await()
              .atMost(Duration.ofSeconds(30))
              .until(() -> HostState.read(sb.id()), Optional::isPresent)
              .orElseThrow();
      assertThat(state.expiresAt().getEpochSecond()).isEqualTo(sb.expiresAt().getEpochSecond());
      assertThat(SandboxPool.isIdleMember(Backends.get("docker").inspect(idle).orElseThrow()))
          .isFalse();
      List<AuditEvent> acquired =
          log.query(
              AuditQuery.builder()
                  .sandbox(sb.id())
                  .types(List.of(AuditEvent.SANDBOX_ACQUIRED))
                  .build());
      assertThat(acquired).hasSize(1);
      assertThat(acquired.get(0).data().toString()).contains(p.name()).doesNotContain(SECRET);
    }
    assertThat(Backends.get("docker").inspect(idle)).isEmpty();
  }

  static int cpuShares(String id) {
    Integer shares =
        DockerEngine.connect()
            .client()
            .inspectContainerCmd(id)
            .exec()
            .getHostConfig()
            .getCpuShares();
    return shares == null ? 0 : shares;
  }

  @Test
  void aWaitingMemberHasALowCpuWeightUntilItIsHandedOut() {
    SandboxPool p = start("cpu", PoolOptions.builder().minIdle(1));
    awaitIdle(p, 1);
    String idle = members(p.name()).get(0);
    // runsc has no update command: a gVisor member keeps the engine's default weight throughout.
    boolean lowered = runtime.equals("runc");
    assertThat(cpuShares(idle)).isEqualTo(lowered ? 128 : 0);

    try (Sandbox sb = Sandbox.create(template())) {
      assertThat(sb.id()).isEqualTo(idle);
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(cpuShares(sb.id())).isEqualTo(lowered ? 1024 : 0));
      assertThat(sb.exec("echo ok").stdout()).isEqualTo("ok\n");
      // The replacement waits at the low weight again.
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> members(p.name()).stream().anyMatch(id -> !id.equals(idle)));
      String next =
          members(p.name()).stream().filter(id -> !id.equals(idle)).findFirst().orElseThrow();
      assertThat(cpuShares(next)).isEqualTo(lowered ? 128 : 0);
    }
  }

  @Test
  void aVariableOnlyReadAtInterpreterStartGetsAnInterpreterStartedWithIt() {
    SandboxPool p = start("startup-env", PoolOptions.builder().minIdle(1));
    awaitIdle(p, 1);
    try (Sandbox sb =
        p.acquire(template().toBuilder().env("PYTHONPATH", "/workspace/lib").build())) {
      assertThat(sb.runCode("import sys; '/workspace/lib' in sys.path").result()).isEqualTo("True");
    }
  }

  @Test
  void noUsersFilesProcessesEnvironmentOrInterpreterStateReachTheNextUser() {
    SandboxPool p = start("leftovers", PoolOptions.builder().minIdle(2).maxTotal(3));
    awaitIdle(p, 2);
    String first;
    try (Sandbox a =
        p.acquire(template().toBuilder().secretEnv("TOKEN", Secret.of(SECRET)).build())) {
      first = a.id();
      a.exec("echo mine > /workspace/a.txt; echo mine > /tmp/b.txt; (sleep 600 &) ; true");
      a.runCode("x = 41; import json");
      assertThat(a.runCode("x + 1").result()).isEqualTo("42");
    }
    try (Sandbox b = p.acquire()) {
      assertThat(b.id()).isNotEqualTo(first);
      assertThat(b.runCode("import os; os.listdir('/workspace'), os.listdir('/tmp')").result())
          .isEqualTo("([], [])");
      assertThat(b.runCode("'x' in globals(), 'json' in globals()").result())
          .isEqualTo("(False, False)");
      String procs =
          b.runCode(
                  "import os\n"
                      + "sorted(open('/proc/%s/cmdline' % p).read().split('\\0')[0] for p in"
                      + " os.listdir('/proc') if p.isdigit())")
              .result();
      assertThat(procs).doesNotContain("sleep");
      assertThat(b.exec("echo \"[$TOKEN]\"").stdout()).isEqualTo("[]\n");
      assertThat(b.runCode("import os; 'TOKEN' in os.environ").result()).isEqualTo("False");
    }
  }

  @Test
  void exhaustionFailsWithAClearErrorOrWaitsForAClose() throws Exception {
    SandboxPool failing =
        start("exhaust", PoolOptions.builder().minIdle(1).maxTotal(1).onExhausted(Exhaustion.FAIL));
    awaitIdle(failing, 1);
    try (Sandbox held = failing.acquire()) {
      assertThatThrownBy(failing::acquire)
          .isInstanceOf(PoolExhaustedException.class)
          .hasMessageContaining("max_total 1")
          .hasMessageContaining("raise max_total");
    }
    failing.close();

    SandboxPool waiting =
        start("wait", PoolOptions.builder().minIdle(0).maxTotal(1).maxWait(Duration.ofMinutes(2)));
    ExecutorService ex = Executors.newSingleThreadExecutor();
    try {
      Sandbox held = waiting.acquire();
      Future<Sandbox> next = ex.submit(() -> waiting.acquire());
      Thread.sleep(500); // only so that the acquire is really waiting; its outcome is asserted
      assertThat(next.isDone()).isFalse();
      held.close();
      try (Sandbox got = next.get(2, TimeUnit.MINUTES)) {
        assertThat(got.runCode("1 + 1").result()).isEqualTo("2");
      }
    } finally {
      ex.shutdownNow();
    }
  }

  @Test
  void concurrentUsersNeverShareASandbox() throws Exception {
    SandboxPool p = start("concurrent", PoolOptions.builder().minIdle(2).maxTotal(3));
    awaitIdle(p, 2);
    ExecutorService ex = Executors.newFixedThreadPool(4);
    try {
      List<Future<String>> ids = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        int n = i;
        ids.add(
            ex.submit(
                () -> {
                  try (Sandbox sb = p.acquire()) {
                    sb.exec("echo " + n + " > /workspace/who");
                    assertThat(sb.runCode("import os; os.listdir('/workspace')").result())
                        .isEqualTo("['who']");
                    assertThat(sb.exec("cat /workspace/who").stdout()).isEqualTo(n + "\n");
                    return sb.id();
                  }
                }));
      }
      Set<String> seen = new HashSet<>();
      for (Future<String> f : ids) {
        assertThat(seen.add(f.get(3, TimeUnit.MINUTES))).isTrue();
      }
      assertThat(p.stats().inUse()).isZero();
    } finally {
      ex.shutdownNow();
    }
  }

  @Test
  void aCrashedIdleMemberIsReplacedAndNeverHandedOut() {
    SandboxPool p = start("crash", PoolOptions.builder().minIdle(1).idleTtl(Duration.ofMinutes(5)));
    awaitIdle(p, 1);
    String victim = members(p.name()).get(0);
    DockerEngine.connect().client().killContainerCmd(victim).exec();
    await().atMost(Duration.ofSeconds(60)).until(() -> p.stats().replaced() >= 1);
    awaitIdle(p, 1);
    try (Sandbox sb = p.acquire()) {
      assertThat(sb.id()).isNotEqualTo(victim);
      assertThat(sb.runCode("2 * 21").result()).isEqualTo("42");
    }
    assertThat(Backends.get("docker").inspect(victim)).isEmpty();
  }

  @Test
  void aHandOutThatFailsIsAuditedAsEndedAndTheUserGetsAnotherMember() {
    SandboxPool p = start("unready", PoolOptions.builder().minIdle(1).maxTotal(2));
    awaitIdle(p, 1);
    String frozen = members(p.name()).get(0);
    // Alive to the pool (its channel is open), but its agent answers nothing.
    DockerEngine.connect().client().pauseContainerCmd(frozen).exec();
    try (AuditLog log = AuditLog.open(home.resolve("audit-unready-" + runtime));
        Sandbox sb =
            p.acquire(
                template().toBuilder().auditLog(log).startTimeout(Duration.ofSeconds(3)).build())) {
      assertThat(sb.id()).isNotEqualTo(frozen);
      assertThat(sb.runCode("2 * 21").result()).isEqualTo("42");
      List<AuditEvent> trail =
          log.query(AuditQuery.builder().sandbox(frozen).build()).stream()
              .filter(e -> e.type().startsWith("sandbox."))
              .sorted(Comparator.comparingLong(AuditEvent::seq))
              .toList();
      // Recorded as acquired while its agent took the hand-out's frames, then as ended with why:
      // the trail shows no sandbox acquired that no one got and nothing ended.
      assertThat(trail)
          .extracting(AuditEvent::type)
          .containsExactly(AuditEvent.SANDBOX_ACQUIRED, AuditEvent.SANDBOX_DESTROYED);
      assertThat(trail.get(1).data().get("reason").toString()).startsWith("hand-out failed");
      assertThat(
              log.query(
                  AuditQuery.builder()
                      .sandbox(sb.id())
                      .types(List.of(AuditEvent.SANDBOX_ACQUIRED))
                      .build()))
          .hasSize(1);
    }
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> Backends.get("docker").inspect(frozen).isEmpty());
  }

  @Test
  void closeDestroysEveryWaitingMember() {
    SandboxPool p = start("close", PoolOptions.builder().minIdle(2));
    awaitIdle(p, 2);
    assertThat(members(p.name())).hasSize(2);
    p.close();
    assertThat(members(p.name())).isEmpty();
    assertThat(SandboxPool.running()).doesNotContain(p);
  }

  @Test
  void pruneRemovesTheMembersOfAKilledHost() throws Exception {
    String pool = "orphans-" + runtime;
    Process owner =
        ChildJvm.start(
            PoolOwner.class, Map.of("AGENTNEST_HOME", home.toString()), pool, "2", runtime);
    List<String> ids;
    try {
      List<String> lines = ChildJvm.readUntil(owner, "ready", 10);
      assertThat(lines).last().isEqualTo("ready");
      ids = members(pool);
      assertThat(ids).hasSize(2);
      ids.forEach(
          id ->
              assertThat(SandboxPool.isIdleMember(Backends.get("docker").inspect(id).orElseThrow()))
                  .isTrue());
    } finally {
      owner.destroyForcibly(); // SIGKILL: the pool's close never runs
      assertThat(owner.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }
    PruneReport report = Sandbox.prune("docker", new PruneOptions(false, null, false));
    assertThat(report.items())
        .filteredOn(i -> ids.contains(i.id()))
        .hasSize(2)
        .allSatisfy(i -> assertThat(i.reason()).contains("owner process"));
    assertThat(members(pool)).isEmpty();
  }

  /** A host process that starts a pool, waits until it is full, then waits to be killed. */
  public static final class PoolOwner {
    public static void main(String[] args) throws InterruptedException {
      SandboxPool p =
          SandboxPool.start(
              SandboxConfig.builder().runtime(args[2]).label("test", "pool-owner").build(),
              PoolOptions.builder().name(args[0]).minIdle(Integer.parseInt(args[1])).build());
      for (int i = 0; i < 600 && p.stats().idle() < Integer.parseInt(args[1]); i++) {
        Thread.sleep(100);
      }
      System.out.println("ready");
      System.out.flush();
      Thread.sleep(120_000);
    }
  }
}
