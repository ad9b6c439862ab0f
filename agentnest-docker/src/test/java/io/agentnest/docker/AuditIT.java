package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.agentnest.AgentNestException;
import io.agentnest.ExecOptions;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** What a sandbox does ends up in the audit log, never with a secret value in it. */
@ExtendWith(DockerEngineRequired.class)
class AuditIT {
  static final String SECRET = "audit-secret-0123456789";

  @Test
  void noSandboxStartsWhileItsAuditLogIsBelowItsFreeDiskReserve(@TempDir Path dir) {
    // A reserve no disk here has (1 PiB): the log refuses records, so no sandbox may run.
    try (AuditLog log = AuditLog.open(dir, new AuditLog.Options(128L << 20, 1L << 50))) {
      Assertions.assertThatThrownBy(
              () -> Sandbox.create(SandboxConfig.builder().auditLog(log).build()))
          .isInstanceOf(AgentNestException.class)
          .hasMessageContaining("no sandbox is created while its actions cannot be audited")
          .hasMessageContaining("below the reserve of 1048576.0 GiB")
          .hasMessageContaining("AGENTNEST_AUDIT_MIN_FREE_DISK");
    }
  }

  @Test
  void lifecycleExecsFilesLimitsRedactionsAndNetworkAreRecorded(@TempDir Path dir)
      throws Exception {
    String id;
    try (AuditLog log = AuditLog.open(dir)) {
      try (Sandbox sb =
          Sandbox.create(
              SandboxConfig.builder()
                  .auditLog(log)
                  .secretEnv("API_TOKEN", Secret.of(SECRET))
                  .network(NetworkPolicy.allowlist("allowed.invalid"))
                  .build())) {
        id = sb.id();
        sb.exec("echo $API_TOKEN");
        sb.runCode("x = 1");
        sb.exec("sleep 5", ExecOptions.builder().timeout(Duration.ofMillis(300)).build());
        sb.files().write("a.txt", "hello");
        sb.files().read("a.txt");
        sb.files().delete("a.txt");
        sb.runCode(
            "import urllib.request\ntry:\n"
                + "    urllib.request.urlopen('http://denied.invalid/', timeout=10)\n"
                + "except Exception:\n    pass");
      }
      await()
          .atMost(Duration.ofSeconds(10))
          .until(
              () ->
                  log.query(AuditQuery.builder().sandbox(id).type("sandbox.destroyed").build())
                          .size()
                      == 1);
      List<AuditEvent> all = log.query(AuditQuery.builder().sandbox(id).limit(1000).build());
      assertThat(all)
          .extracting(AuditEvent::type)
          .contains(
              "sandbox.created",
              "exec.started",
              "exec.finished",
              "limit.hit",
              "secret.redacted",
              "file.write",
              "file.read",
              "file.delete",
              "network.attempt",
              "sandbox.destroyed");
      AuditEvent net =
          all.stream().filter(e -> e.type().equals("network.attempt")).findFirst().orElseThrow();
      assertThat(net.data())
          .containsEntry("decision", "DENIED")
          .containsEntry("host", "denied.invalid");
      AuditEvent limit =
          all.stream().filter(e -> e.type().equals("limit.hit")).findFirst().orElseThrow();
      assertThat(limit.data())
          .containsEntry("limit", "TIMEOUT")
          .containsEntry("reported_by", "sandbox");
      // What the agent says about a call is marked as the sandbox's word; the host adds its own.
      AuditEvent finished =
          all.stream().filter(e -> e.type().equals("exec.finished")).findFirst().orElseThrow();
      assertThat(finished.data()).containsKey("host_ms");
      assertThat(finished.data().get("sandbox_reported")).asList().contains("exit", "duration_ms");
      assertThat(log.verify().ok()).isTrue();
    }
    String raw = Files.readString(dir.resolve(AuditLog.EVENTS_FILE));
    assertThat(raw).contains(id).doesNotContain(SECRET);
  }
}
