package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.ExecOptions;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxBudgets;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Code in a real sandbox floods the host with egress connections (what the attacker did: 1,556
 * tunnels in 10 s, 3,100 records): the host refuses past the budget, records a handful of lines and
 * destroys the sandbox when it keeps going.
 */
@ExtendWith(DockerEngineRequired.class)
class BudgetsIT {
  @Test
  void aSandboxOpeningConnectionsPastItsBudgetIsRefusedAuditedBrieflyAndDestroyed(
      @TempDir Path dir) {
    String id;
    try (AuditLog log = AuditLog.open(dir)) {
      Sandbox sb =
          Sandbox.create(
              SandboxConfig.builder()
                  .auditLog(log)
                  .network(NetworkPolicy.allowlist("allowed.invalid"))
                  .budgets(
                      SandboxBudgets.defaults()
                          .withTunnelsPerSecond(1)
                          .withTunnelBurst(5)
                          .withDestroyAfterRefusals(50))
                  .build());
      id = sb.id();
      try (sb) {
        // Bounded: at most 2,000 connections, each given up after 2 s.
        assertThatThrownBy(
                () ->
                    sb.runCode(
                        "import socket\n"
                            + "for i in range(2000):\n"
                            + "    try:\n"
                            + "        s = socket.create_connection(('127.0.0.1', 3128), timeout=2)\n"
                            + "        s.close()\n"
                            + "    except OSError:\n"
                            + "        pass\n",
                        ExecOptions.builder().timeout(Duration.ofSeconds(120)).build()))
            .isInstanceOf(SandboxClosedException.class)
            .hasMessageContaining("egress connections than its budget allows");
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> Sandbox.list().stream().map(SandboxInfo::id).noneMatch(id::equals));
      log.flush();
      List<AuditEvent> all =
          log.query(AuditQuery.builder().sandbox(id).limit(10_000).oldestFirst().build());
      // Created, the exec, 5 connections that closed without a request (folded: 2 + 2 counts),
      // the refusal report, the destroy report, destroyed: nowhere near one record per attempt.
      assertThat(all.size()).as("records: %s", all).isLessThanOrEqualTo(15);
      assertThat(all)
          .filteredOn(e -> e.type().equals("limit.hit"))
          .extracting(e -> e.data().get("action"))
          .containsExactly("refused", "destroyed");
      assertThat(all)
          .filteredOn(e -> e.type().equals("sandbox.destroyed"))
          .singleElement()
          .satisfies(e -> assertThat(String.valueOf(e.data().get("reason"))).contains("budget"));
      assertThat(log.verify().ok()).isTrue();
    }
  }
}
