package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.SandboxConfig;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The approver role (issue 42, item 18). The attacks: the agent holding a tenant's agent key
 * answers its own sandbox's question when an approver is required, over /v1 and the console; an
 * approver key makes, runs or reads what it should not; one tenant's approver answers another's
 * question; a revoked approver key keeps answering. Questions are asked the way a sandbox asks:
 * through the approval handler the server gave the sandbox it created.
 */
class ApproverRoleTest {
  @TempDir Path dir;
  FakeSandboxes running;
  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @AfterEach
  void stop() {
    if (running != null) {
      running.close();
    }
  }

  private static Tenant tenant(String name) {
    return new Tenant(name, 5, 4L << 30, 4, 1000, null, null);
  }

  /** A sandbox of {@code agentKey}'s tenant whose risky operations ask. */
  private SandboxConfig sandboxOf(String agentKey) {
    int before = running.created.size();
    running.http().created(agentKey, "{\"approvals\": \"recommended\"}");
    return running.created.get(before);
  }

  /** The sandbox asks (as its policy would on `rm`); returns the pending answer. */
  private static CompletableFuture<ApprovalDecision> ask(SandboxConfig sandbox, String id) {
    ApprovalHandler h = Objects.requireNonNull(sandbox.approvalHandler());
    return h.decide(
            new ApprovalRequest(id, "file_deletion", "kept.txt", "rm kept.txt", Instant.now()))
        .toCompletableFuture();
  }

  private String onlyQuestion(String key) {
    JsonNode list = running.http().get("/v1/approvals", key).json().get("approvals");
    assertThat(list).hasSize(1);
    return list.get(0).get("id").asText();
  }

  private record Console(String cookie, String csrf, JsonNode session) {}

  private Console signIn(String key) throws Exception {
    HttpResponse<String> r =
        client.send(
            req("/console/session")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + key + "\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    String setCookie = r.headers().firstValue("Set-Cookie").orElseThrow();
    JsonNode body = Wire.JSON.readTree(r.body());
    return new Console(
        setCookie.substring(0, setCookie.indexOf(';')), body.get("csrf").asText(), body);
  }

  private HttpResponse<String> onConsole(Console c, String method, String path, String json)
      throws Exception {
    HttpRequest.Builder b =
        req(path)
            .header("Cookie", c.cookie())
            .header("X-CSRF-Token", c.csrf())
            .method(
                method,
                json.isEmpty()
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(json));
    if (!json.isEmpty()) {
      b.header("Content-Type", "application/json");
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpRequest.Builder req(String path) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + running.port + path))
        .timeout(Duration.ofSeconds(30));
  }

  @Test
  void anAgentKeyCannotAnswerItsOwnSandboxsQuestionOverTheApiOrTheConsoleWhenAnApproverIsRequired()
      throws Exception {
    running = new FakeSandboxes(dir, "policy: {approver_role_required: true}\n");
    String agent = running.store.add(tenant("alpha"), null);
    String approver = running.store.issueKey("alpha", null, KeyRole.APPROVER);
    SandboxConfig sb = sandboxOf(agent);
    CompletableFuture<ApprovalDecision> answer = ask(sb, "fake10000000000000000");
    // The agent may still see what its sandbox waits for; it may not decide it.
    String id = onlyQuestion(agent);

    Http.Reply api =
        running.http().json("POST", "/v1/approvals/" + id, agent, "{\"approve\": true}");
    assertThat(api.status()).as(api.text()).isEqualTo(403);
    assertThat(api.json().at("/error/message").asText()).contains("policy.approver_role_required");
    assertThat(api.json().at("/error/fix").asText())
        .contains("agentnest tenant key alpha --role approver");

    Console agentConsole = signIn(agent);
    assertThat(agentConsole.session().get("role").asText()).isEqualTo("agent");
    HttpResponse<String> console =
        onConsole(agentConsole, "POST", "/v1/approvals/" + id, "{\"approve\": true}");
    assertThat(console.statusCode()).as(console.body()).isEqualTo(403);
    assertThat(console.body()).contains("--role approver");
    assertThat(answer).isNotDone();

    JsonNode whoami = running.http().get("/v1/tenant", approver).json();
    assertThat(whoami.get("role").asText()).isEqualTo("approver");
    assertThat(whoami.get("approverRoleRequired").asBoolean()).isTrue();
    Http.Reply approved =
        running
            .http()
            .json(
                "POST", "/v1/approvals/" + id, approver, "{\"approve\": true, \"reason\": \"ok\"}");
    assertThat(approved.status()).as(approved.text()).isEqualTo(204);
    ApprovalDecision d = answer.get(10, TimeUnit.SECONDS);
    assertThat(d.allowed()).isTrue();
    assertThat(d.decidedBy()).isEqualTo("api:alpha:approver:" + TenantStore.keyId(approver));
  }

  @Test
  void anApproverSignedInToTheConsoleSeesAndAnswersTheQuestionButNotTheSandboxsOutput()
      throws Exception {
    running = new FakeSandboxes(dir, "");
    String agent = running.store.add(tenant("alpha"), null);
    running.store.requireApproverRole("alpha", true);
    String approver = running.store.issueKey("alpha", null, KeyRole.APPROVER);
    String sandboxId = running.http().created(agent, "{\"approvals\": \"recommended\"}");
    CompletableFuture<ApprovalDecision> answer = ask(running.created.get(0), sandboxId);

    Console c = signIn(approver);
    assertThat(c.session().get("role").asText()).isEqualTo("approver");
    HttpResponse<String> list = onConsole(c, "GET", "/v1/approvals", "");
    assertThat(list.statusCode()).isEqualTo(200);
    JsonNode approvals = Wire.JSON.readTree(list.body()).get("approvals");
    assertThat(approvals).hasSize(1);
    assertThat(onConsole(c, "GET", "/v1/sandboxes", "").statusCode()).isEqualTo(200);
    assertThat(onConsole(c, "GET", "/v1/sandboxes/" + sandboxId + "/audit", "").statusCode())
        .isEqualTo(200);
    HttpResponse<String> runs = onConsole(c, "GET", "/console/executions?sandbox=" + sandboxId, "");
    assertThat(runs.statusCode()).as(runs.body()).isEqualTo(403);
    HttpResponse<String> files = onConsole(c, "GET", "/v1/sandboxes/" + sandboxId + "/files", "");
    assertThat(files.statusCode()).as(files.body()).isEqualTo(403);

    HttpResponse<String> denied =
        onConsole(
            c,
            "POST",
            "/v1/approvals/" + approvals.get(0).get("id").asText(),
            "{\"approve\": false, \"reason\": \"not today\"}");
    assertThat(denied.statusCode()).as(denied.body()).isEqualTo(204);
    ApprovalDecision d = answer.get(10, TimeUnit.SECONDS);
    assertThat(d.allowed()).isFalse();
    assertThat(d.decidedBy()).isEqualTo("console:alpha:approver:" + TenantStore.keyId(approver));
  }

  @Test
  void withoutTheSettingAnAgentKeyAnswersAsBeforeAndATenantsOwnSettingBindsOnlyThatTenant()
      throws Exception {
    running = new FakeSandboxes(dir, "");
    String alpha = running.store.add(tenant("alpha"), null);
    String beta = running.store.add(tenant("beta"), null);
    running.store.requireApproverRole("alpha", true);
    CompletableFuture<ApprovalDecision> alphaAsks = ask(sandboxOf(alpha), "a");
    CompletableFuture<ApprovalDecision> betaAsks = ask(sandboxOf(beta), "b");

    Http.Reply refused =
        running
            .http()
            .json("POST", "/v1/approvals/" + onlyQuestion(alpha), alpha, "{\"approve\": true}");
    assertThat(refused.status()).isEqualTo(403);
    assertThat(refused.json().at("/error/message").asText()).contains("the tenant's setting");
    assertThat(alphaAsks).isNotDone();
    Http.Reply answered =
        running
            .http()
            .json("POST", "/v1/approvals/" + onlyQuestion(beta), beta, "{\"approve\": true}");
    assertThat(answered.status()).as(answered.text()).isEqualTo(204);
    assertThat(betaAsks.get(10, TimeUnit.SECONDS).decidedBy()).isEqualTo("api:beta");
  }

  @Test
  void anApproverKeyCannotCreateExecReadFilesOrStreamThroughAnyApi() throws Exception {
    running = new FakeSandboxes(dir, "");
    String agent = running.store.add(tenant("alpha"), null);
    String approver = running.store.issueKey("alpha", null, KeyRole.APPROVER);
    String id = running.http().created(agent, "{}");
    String sb = "/v1/sandboxes/" + id;
    Http h = running.http();

    assertForbidden(h.json("POST", "/v1/sandboxes", approver, "{}"));
    assertForbidden(h.json("POST", sb + "/exec", approver, "{\"command\": \"id\"}"));
    assertForbidden(h.json("POST", sb + "/code", approver, "{\"code\": \"1\"}"));
    assertForbidden(h.get(sb + "/files?recursive=true", approver));
    assertForbidden(h.get(sb + "/files/content?path=a.txt", approver));
    assertForbidden(
        h.send("PUT", sb + "/files/content?path=a.txt", approver, new byte[] {1}, "text/plain"));
    assertForbidden(h.get(sb + "/archive", approver));
    assertForbidden(h.get(sb + "/artifacts", approver));
    assertForbidden(h.delete(sb, approver));
    assertForbidden(h.json("POST", sb + "/extend", approver, "{\"seconds\": 60}"));
    assertForbidden(h.json("POST", sb + "/fork", approver, "{}"));
    assertForbidden(h.json("POST", sb + "/snapshots", approver, "{\"name\": \"s\"}"));
    assertForbidden(h.get("/v1/snapshots", approver));

    HttpResponse<String> e2b =
        client.send(
            req("/e2b/sandboxes")
                .header("X-API-KEY", approver)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\": \"base\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(e2b.statusCode()).as(e2b.body()).isEqualTo(403);
    assertThat(e2b.body()).contains("approver key");

    // The WebSocket form of an execution is refused before the upgrade.
    CompletableFuture<WebSocket> ws =
        client
            .newWebSocketBuilder()
            .header("Authorization", "Bearer " + approver)
            .buildAsync(
                URI.create("ws://127.0.0.1:" + running.port + sb + "/stream"),
                new WebSocket.Listener() {});
    assertThatThrownBy(() -> ws.get(30, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(WebSocketHandshakeException.class)
        .satisfies(
            e ->
                assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode())
                    .isEqualTo(403));

    // What an approver reads to judge a question it may.
    assertThat(h.get("/v1/approvals", approver).status()).isEqualTo(200);
    assertThat(h.get("/v1/sandboxes", approver).status()).isEqualTo(200);
    assertThat(h.get(sb, approver).status()).isEqualTo(200);
    assertThat(running.created).hasSize(1);
  }

  private static void assertForbidden(Http.Reply r) {
    assertThat(r.status()).as(r.text()).isEqualTo(403);
    assertThat(r.json().at("/error/message").asText()).contains("an approver key");
    assertThat(r.json().at("/error/fix").asText()).contains("agent keys");
  }

  @Test
  void anApproverOfOneTenantCannotSeeOrAnswerAnotherTenantsQuestion() throws Exception {
    running = new FakeSandboxes(dir, "policy: {approver_role_required: true}\n");
    running.store.add(tenant("alpha"), null);
    String alphaApprover = running.store.issueKey("alpha", null, KeyRole.APPROVER);
    String beta = running.store.add(tenant("beta"), null);
    String betaApprover = running.store.issueKey("beta", null, KeyRole.APPROVER);
    CompletableFuture<ApprovalDecision> betaAsks = ask(sandboxOf(beta), "b");
    String id = onlyQuestion(betaApprover);

    assertThat(running.http().get("/v1/approvals", alphaApprover).json().get("approvals"))
        .isEmpty();
    Http.Reply stolen =
        running.http().json("POST", "/v1/approvals/" + id, alphaApprover, "{\"approve\": true}");
    assertThat(stolen.status()).as(stolen.text()).isEqualTo(404);
    Console alphaConsole = signIn(alphaApprover);
    assertThat(
            onConsole(alphaConsole, "POST", "/v1/approvals/" + id, "{\"approve\": true}")
                .statusCode())
        .isEqualTo(404);
    assertThat(betaAsks).isNotDone();
  }

  @Test
  void aRevokedApproverKeyStopsAnsweringOverTheApiAndItsConsoleSessionEnds() throws Exception {
    running = new FakeSandboxes(dir, "policy: {approver_role_required: true}\n");
    String agent = running.store.add(tenant("alpha"), null);
    String approver = running.store.issueKey("alpha", null, KeyRole.APPROVER);
    CompletableFuture<ApprovalDecision> answer = ask(sandboxOf(agent), "a");
    String id = onlyQuestion(approver);
    Console c = signIn(approver);

    assertThat(running.store.revoke(TenantStore.keyId(approver))).isTrue();

    Http.Reply api =
        running.http().json("POST", "/v1/approvals/" + id, approver, "{\"approve\": true}");
    assertThat(api.status()).as(api.text()).isEqualTo(401);
    assertThat(api.errorCode()).isEqualTo("key_revoked");
    assertThat(onConsole(c, "POST", "/v1/approvals/" + id, "{\"approve\": true}").statusCode())
        .isEqualTo(401);
    assertThat(onConsole(c, "GET", "/v1/approvals", "").statusCode()).isEqualTo(401);
    assertThat(answer).isNotDone();
  }
}
