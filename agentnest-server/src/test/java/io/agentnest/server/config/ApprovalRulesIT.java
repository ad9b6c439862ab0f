package io.agentnest.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.Http;
import io.agentnest.server.TestServer;
import io.agentnest.server.tenancy.Tenant;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Approval rules on a server: the operator's floor ({@code policy.approvals} in server.yaml), a
 * tenant's floor ({@code tenant add --approvals recommended}) and a request's own rules combine to
 * the strictest; a request can add rules but never loosen a floor; hostile rules (a pattern that
 * does not compile, too many rules, a pattern that backtracks without end) are refused or fail
 * closed, on the real engine through the real HTTP stack.
 */
@ExtendWith(DockerEngineRequired.class)
class ApprovalRulesIT {
  @TempDir static Path dir;

  static TestServer running;
  static Http http;
  static String plain;
  static String careful;

  @BeforeAll
  static void start() {
    ServerConfig config =
        ServerConfig.parse(
            "listen: {host: 127.0.0.1, port: 0}\n"
                + "policy:\n"
                + "  approvals:\n"
                + "    shell: {'\\bterraform\\s+apply\\b': deny}\n",
            "server.yaml");
    running = TestServer.start(dir, config);
    plain = running.key(new Tenant("plain", 4, 2L << 30, 4, 1000, null, null));
    careful =
        running.key(new Tenant("careful", 4, 2L << 30, 4, 1000, null, null, 600, "recommended"));
    http = running.http();
  }

  @AfterAll
  static void stop() {
    if (running != null) {
      running.close();
    }
  }

  private static Http.Reply exec(String key, String sandbox, String command) {
    return http.json(
        "POST",
        "/v1/sandboxes/" + sandbox + "/exec",
        key,
        "{\"command\": \"" + command.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}");
  }

  @Test
  void theServersFloorHoldsForASandboxThatAskedForNone() {
    String sb = http.created(plain, "{\"memoryBytes\": 268435456, \"approvals\": \"none\"}");
    Http.Reply denied = exec(plain, sb, "terraform apply -auto-approve");
    assertThat(denied.status()).as(denied.text()).isEqualTo(403);
    assertThat(denied.errorCode()).isEqualTo("approval_denied");
    assertThat(denied.text()).contains("terraform");
    // everything else the floor does not name runs, deletion included (no tenant floor here)
    Http.Reply rm = exec(plain, sb, "echo x > f && rm f && echo gone");
    assertThat(rm.status()).as(rm.text()).isEqualTo(200);
    assertThat(rm.json().get("stdout").asText()).contains("gone");
  }

  @Test
  void aRequestAddsItsOwnRulesToTheFloors() {
    String sb =
        http.created(
            plain,
            "{\"memoryBytes\": 268435456, \"approvals\": {\"shell\": [{\"pattern\":"
                + " \"\\\\bmake\\\\s+deploy\\\\b\", \"action\": \"deny\"}], \"fileDelete\":"
                + " \"allow\", \"timeoutSeconds\": 30}}");
    assertThat(exec(plain, sb, "make deploy").status()).isEqualTo(403);
    assertThat(exec(plain, sb, "terraform apply").status()).isEqualTo(403);
    assertThat(exec(plain, sb, "echo fine").status()).isEqualTo(200);
  }

  @Test
  @SuppressWarnings("unchecked")
  void aTenantsFloorMakesDeletionWaitForItsPersonEvenWhenTheRequestSaysAllow() throws Exception {
    String sb =
        http.created(
            careful, "{\"memoryBytes\": 268435456, \"approvals\": {\"fileDelete\": \"allow\"}}");
    assertThat(exec(careful, sb, "echo x > kept.txt").status()).isEqualTo(200);
    CompletableFuture<Http.Reply> rm =
        CompletableFuture.supplyAsync(() -> exec(careful, sb, "rm kept.txt"));
    JsonNode[] q = {null};
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              JsonNode list = http.get("/v1/approvals", careful).json().get("approvals");
              q[0] = list.size() > 0 ? list.get(0) : null;
              return q[0] != null;
            });
    assertThat(q[0].get("sandboxId").asText()).isEqualTo(sb);
    assertThat(
            http.json(
                    "POST",
                    "/v1/approvals/" + q[0].get("id").asText(),
                    careful,
                    "{\"approve\": false, \"reason\": \"keep it\"}")
                .status())
        .isEqualTo(204);
    assertThat(rm.get(120, TimeUnit.SECONDS).status()).isEqualTo(403);
    assertThat(http.get("/v1/sandboxes/" + sb + "/files/content?path=kept.txt", careful).status())
        .isEqualTo(200);
  }

  @Test
  void hostileRulesAreRefusedBeforeASandboxStarts() {
    int before = http.get("/v1/sandboxes", plain).json().get("sandboxes").size();
    Http.Reply badPattern =
        http.json(
            "POST",
            "/v1/sandboxes",
            plain,
            "{\"approvals\": {\"shell\": [{\"pattern\": \"(\", \"action\": \"deny\"}]}}");
    assertThat(badPattern.status()).as(badPattern.text()).isEqualTo(400);
    assertThat(badPattern.errorCode()).isEqualTo("invalid_field");
    assertThat(badPattern.text()).contains("not a valid regular expression");

    StringBuilder many = new StringBuilder("{\"approvals\": {\"shell\": [");
    for (int i = 0; i <= ApprovalRules.MAX_RULES; i++) {
      many.append(i == 0 ? "" : ",").append("{\"pattern\": \"x").append(i).append("\"");
      many.append(", \"action\": \"ask\"}");
    }
    Http.Reply tooMany = http.json("POST", "/v1/sandboxes", plain, many.append("]}}").toString());
    assertThat(tooMany.status()).isEqualTo(400);
    assertThat(tooMany.text()).contains("approvals.shell").contains("at most 32");

    Http.Reply longPattern =
        http.json(
            "POST",
            "/v1/sandboxes",
            plain,
            "{\"approvals\": {\"shell\": [{\"pattern\": \""
                + "a".repeat(ApprovalRules.MAX_PATTERN + 1)
                + "\", \"action\": \"ask\"}]}}");
    assertThat(longPattern.status()).isEqualTo(400);

    Http.Reply unknown =
        http.json("POST", "/v1/sandboxes", plain, "{\"approvals\": {\"allowAll\": true}}");
    assertThat(unknown.errorCode()).isEqualTo("unknown_field");
    Http.Reply badAction =
        http.json(
            "POST", "/v1/sandboxes", plain, "{\"approvals\": {\"fileDelete\": \"whatever\"}}");
    assertThat(badAction.errorCode()).isEqualTo("invalid_field");
    assertThat(badAction.text()).contains("approvals.fileDelete");
    Http.Reply longWait =
        http.json("POST", "/v1/sandboxes", plain, "{\"approvals\": {\"timeoutSeconds\": 86400}}");
    assertThat(longWait.status()).isEqualTo(400);
    assertThat(http.get("/v1/sandboxes", plain).json().get("sandboxes").size())
        .as("nothing was started for a refused request")
        .isEqualTo(before);
  }

  /**
   * A tenant's pattern that backtracks without end runs on the server for each command: it gives up
   * after its step budget and counts as matching, so the command is refused, and the server answers
   * at once instead of spending a thread on it.
   */
  @Test
  void aPatternThatBacktracksWithoutEndFailsClosedAndTheServerStaysResponsive() {
    String sb =
        http.created(
            plain,
            "{\"memoryBytes\": 268435456, \"approvals\": {\"shell\": [{\"pattern\":"
                + " \"(.*a){20}x\", \"action\": \"deny\"}]}}");
    Http.Reply r = exec(plain, sb, "echo " + "a".repeat(40) + "!");
    assertThat(r.status()).as(r.text()).isEqualTo(403);
    assertThat(r.text()).contains("took more than");
    assertThat(http.get("/v1/health", plain).status()).isEqualTo(200);
  }
}
