package io.agentnest.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalRequest;
import io.agentnest.server.FakeSandboxes;
import io.agentnest.server.Http;
import io.agentnest.server.tenancy.Tenant;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The approvals queue shared through PostgreSQL: a question a sandbox asks on server A is listed
 * and answered through server B, and the answer reaches the sandbox waiting on A, pushed by
 * LISTEN/NOTIFY, also when A's listening connection broke in between.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class PostgresApprovalsIT {
  private static final String SERVER_YAML = "max_json: 64k\nmax_body: 1m\n";

  private TestPostgres pg;
  private FakeSandboxes a;
  private FakeSandboxes b;
  private String key;

  @BeforeEach
  void twoServers() {
    pg = TestPostgres.create();
    a = new FakeSandboxes(pg.shared(), SERVER_YAML, "a");
    b = new FakeSandboxes(pg.shared(), SERVER_YAML, "b");
    key = a.store.add(new Tenant("ops", 5, 1L << 34, 8, 1000, null, null, 0), null);
  }

  @AfterEach
  void stop() throws SQLException {
    if (pg == null) {
      return; // skipped for want of PostgreSQL
    }
    try {
      a.close();
      b.close();
    } finally {
      pg.close();
    }
  }

  private CompletableFuture<ApprovalDecision> askOnA(String target, String detail) {
    return a.approvalHandler("ops", Duration.ofMinutes(2))
        .decide(new ApprovalRequest("sb-on-a", "file_deletion", target, detail, Instant.now()))
        .toCompletableFuture();
  }

  private JsonNode listed(FakeSandboxes s) {
    Http.Reply r = s.http().get("/v1/approvals", key);
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    return r.json().get("approvals");
  }

  private Http.Reply decide(FakeSandboxes s, String id, boolean approve, String reason) {
    return s.http()
        .json(
            "POST",
            "/v1/approvals/" + id,
            key,
            "{\"approve\": " + approve + ", \"reason\": \"" + reason + "\"}");
  }

  @Test
  void aQuestionAskedOnAIsListedAndAnsweredOnBAndTheAnswerReachesTheSandboxOnA() {
    CompletableFuture<ApprovalDecision> waiting = askOnA("/data/report.csv", "rm report.csv");
    JsonNode onB = listed(b);
    assertThat(onB).hasSize(1);
    assertThat(onB.get(0).get("sandboxId").asText()).isEqualTo("sb-on-a");
    assertThat(onB.get(0).get("target").asText()).isEqualTo("/data/report.csv");
    assertThat(listed(a)).hasSize(1);
    String id = onB.get(0).get("id").asText();

    assertThat(decide(b, id, true, "fine by ops").status()).isEqualTo(204);
    await()
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(20))
        .until(waiting::isDone);
    ApprovalDecision d = waiting.join();
    assertThat(d.allowed()).isTrue();
    assertThat(d.reason()).isEqualTo("fine by ops");
    assertThat(d.decidedBy()).isEqualTo("api:ops");
    // Answered once, listed nowhere, and a second answer finds nothing.
    await().atMost(Duration.ofSeconds(10)).until(() -> listed(a).isEmpty());
    assertThat(listed(b)).isEmpty();
    assertThat(decide(a, id, false, "too late").status()).isEqualTo(404);
  }

  @Test
  void aDenialOnBReachesAAndAnotherTenantCannotAnswer() {
    String other = b.store.add(new Tenant("other", 1, 1L << 30, 1, 100, null, null, 0), null);
    CompletableFuture<ApprovalDecision> waiting = askOnA("x", "rm x");
    String id = listed(b).get(0).get("id").asText();
    Http.Reply foreign = b.http().json("POST", "/v1/approvals/" + id, other, "{\"approve\": true}");
    assertThat(foreign.status()).isEqualTo(404);
    assertThat(b.http().get("/v1/approvals", other).json().get("approvals")).isEmpty();
    assertThat(waiting).isNotDone();

    assertThat(decide(b, id, false, "no").status()).isEqualTo(204);
    await().atMost(Duration.ofSeconds(10)).until(waiting::isDone);
    assertThat(waiting.join().allowed()).isFalse();
  }

  @Test
  void anAnswerGivenWhileAsListenerIsCutOffStillArrives() throws Exception {
    CompletableFuture<ApprovalDecision> waiting = askOnA("y", "rm y");
    String id = listed(b).get(0).get("id").asText();
    try (Connection admin = pg.admin();
        Statement s = admin.createStatement()) {
      s.execute(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name ="
              + " 'agentnest-server-listener' AND datname = '"
              + pg.database
              + "'");
    }
    assertThat(decide(b, id, true, "ok").status()).isEqualTo(204);
    await().atMost(Duration.ofSeconds(20)).until(waiting::isDone);
    assertThat(waiting.join().allowed()).isTrue();
  }

  @Test
  void sandboxTextIsBoundedAndFreeOfNulAndANulReasonIsRefused() {
    CompletableFuture<ApprovalDecision> waiting =
        askOnA("evil\0'; DROP TABLE approvals; --", "d".repeat(100_000));
    JsonNode q = listed(b).get(0);
    assertThat(q.get("target").asText()).isEqualTo("evil\uFFFD'; DROP TABLE approvals; --");
    assertThat(q.get("detail").asText()).hasSizeLessThan(2_100);
    Http.Reply nul = decide(b, q.get("id").asText(), true, "\\u0000");
    assertThat(nul.status()).isEqualTo(400);
    assertThat(nul.text()).contains("NUL");
    assertThat(decide(b, "apr_%27%3B%20DROP%20TABLE%20approvals", true, "x").status())
        .isEqualTo(404);
    assertThat(waiting).isNotDone();
    assertThat(listed(a)).hasSize(1);
  }
}
