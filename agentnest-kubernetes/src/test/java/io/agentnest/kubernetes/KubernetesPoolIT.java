package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.agentnest.PoolOptions;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import io.agentnest.spi.RuntimeBackend;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The same pool as on Docker, with pods on a real cluster: a claimed pod gets its user's secrets,
 * environment, TTL and labels at claim, no user's leftovers reach the next, a lost idle pod is
 * replaced and close deletes the waiting pods. At most two pods at a time (a 2-core machine).
 */
@ExtendWith(KubernetesClusterRequired.class)
class KubernetesPoolIT {
  static final String SECRET = "kube-pool-secret-" + Long.toHexString(System.nanoTime());
  static final RuntimeBackend BACKEND = Backends.get("kubernetes");

  @TempDir static Path dir;
  private final List<SandboxPool> pools = new ArrayList<>();

  @AfterEach
  void closePools() {
    pools.forEach(SandboxPool::close);
    pools.clear();
  }

  static SandboxConfig template() {
    return SandboxConfig.builder().backend("kubernetes").label("test", "kube-pool-it").build();
  }

  SandboxPool start(String name, PoolOptions.Builder options) {
    SandboxPool p = SandboxPool.start(template(), options.name(name).build());
    pools.add(p);
    return p;
  }

  static void awaitIdle(SandboxPool p, int n) {
    await().atMost(Duration.ofMinutes(3)).until(() -> p.stats().idle() >= n);
  }

  static List<SandboxInfo> members(String pool) {
    return BACKEND.list().stream().filter(i -> pool.equals(i.labels().get(Labels.POOL))).toList();
  }

  @Test
  void aClaimedPodGetsItsUsersSecretEnvironmentTtlAndLabelsAtClaim() throws Exception {
    SandboxPool p = start("kube-claim", PoolOptions.builder().minIdle(1).maxTotal(2));
    awaitIdle(p, 1);
    SandboxInfo idle = members(p.name()).get(0);
    assertThat(SandboxPool.isIdleMember(idle)).isTrue();
    try (AuditLog log = AuditLog.open(dir.resolve("audit-claim"));
        Sandbox sb =
            Sandbox.create(
                template().toBuilder()
                    .auditLog(log)
                    .env("MODE", "claimed")
                    .secretEnv("TOKEN", Secret.of(SECRET))
                    .ttl(Duration.ofMinutes(4))
                    .build())) {
      assertThat(sb.id()).isEqualTo(idle.id());
      assertThat(sb.exec("echo \"$MODE $TOKEN\"").stdout()).isEqualTo("claimed [REDACTED:TOKEN]\n");
      assertThat(sb.runCode("import os; os.environ['TOKEN'] == '" + SECRET + "'").result())
          .isEqualTo("True");
      Instant expected = Instant.now().plus(Duration.ofMinutes(4));
      assertThat(sb.expiresAt()).isBetween(expected.minusSeconds(60), expected);
      // The hand-out labels and host state are written while the user already has the sandbox
      // (a moment later, and one API server round trip, off the claim's path).
      SandboxInfo claimed =
          await()
              .atMost(Duration.ofSeconds(30))
              .until(
                  () -> BACKEND.inspect(sb.id()).orElseThrow(),
                  info -> info.labels().containsKey(Labels.POOL_ACQUIRED));
      assertThat(claimed.labels())
          .containsEntry(Labels.EXPIRES, Long.toString(sb.expiresAt().getEpochSecond()))
          .containsKey(Labels.POOL_ACQUIRED);
      assertThat(claimed.labels().toString()).doesNotContain(SECRET);
      assertThat(SandboxPool.isIdleMember(claimed)).isFalse();
      assertThat(
              log.query(
                  AuditQuery.builder()
                      .sandbox(sb.id())
                      .types(List.of(AuditEvent.SANDBOX_ACQUIRED))
                      .build()))
          .hasSize(1);
    }
  }

  @Test
  void noUsersFilesProcessesEnvironmentOrInterpreterStateReachTheNextUser() {
    SandboxPool p = start("kube-leftovers", PoolOptions.builder().minIdle(1).maxTotal(2));
    awaitIdle(p, 1);
    String first;
    try (Sandbox a =
        p.acquire(template().toBuilder().secretEnv("TOKEN", Secret.of(SECRET)).build())) {
      first = a.id();
      a.exec("echo mine > /workspace/a.txt; echo mine > /tmp/b.txt; (sleep 600 &) ; true");
      a.runCode("x = 41");
    }
    awaitIdle(p, 1);
    try (Sandbox b = p.acquire()) {
      assertThat(b.id()).isNotEqualTo(first);
      assertThat(b.runCode("import os; os.listdir('/workspace'), os.listdir('/tmp')").result())
          .isEqualTo("([], [])");
      assertThat(b.runCode("'x' in globals(), 'TOKEN' in os.environ").result())
          .isEqualTo("(False, False)");
      assertThat(
              b.runCode(
                      "sorted(open('/proc/%s/cmdline' % p).read().split('\\0')[0] for p in"
                          + " os.listdir('/proc') if p.isdigit())")
                  .result())
          .doesNotContain("sleep");
    }
  }

  @Test
  void aLostIdlePodIsReplacedAndCloseDeletesTheWaitingPods() {
    SandboxPool p =
        start("kube-refill", PoolOptions.builder().minIdle(1).idleTtl(Duration.ofMinutes(5)));
    awaitIdle(p, 1);
    String victim = members(p.name()).get(0).id();
    BACKEND.destroy(victim);
    await().atMost(Duration.ofMinutes(2)).until(() -> p.stats().replaced() >= 1);
    awaitIdle(p, 1);
    try (Sandbox sb = p.acquire()) {
      assertThat(sb.id()).isNotEqualTo(victim);
      assertThat(sb.runCode("6 * 7").result()).isEqualTo("42");
    }
    awaitIdle(p, 1);
    p.close();
    assertThat(members(p.name())).isEmpty();
  }
}
