package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
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
 * The approvals queue over the real HTTP stack: a sandbox created with {@code "approvals":
 * "recommended"} waits on a risky operation until its tenant answers; another tenant neither sees
 * nor answers the question; hostile answers are refused.
 */
@ExtendWith(DockerEngineRequired.class)
class ApprovalsIT {
  @TempDir static Path dir;

  static TestServer running;
  static Http http;
  static String keyA;
  static String keyB;
  static String sandbox;

  @BeforeAll
  static void start() {
    running = TestServer.start(dir, ServerConfig.defaults().withListen("127.0.0.1", 0));
    keyA = running.key(new Tenant("alpha", 2, 2L << 30, 2, 1000, null, null));
    keyB = running.key(new Tenant("beta", 2, 2L << 30, 2, 1000, null, null));
    http = running.http();
    sandbox = http.created(keyA, "{\"memoryBytes\": 268435456, \"approvals\": \"recommended\"}");
  }

  @AfterAll
  static void stop() {
    if (running != null) {
      running.close();
    }
  }

  private static String sb(String rest) {
    return "/v1/sandboxes/" + sandbox + rest;
  }

  /** Starts {@code rm name} (file deletion asks) and returns the question once it waits. */
  private static JsonNode ask(String name, CompletableFuture<Http.Reply>[] call) {
    http.json("POST", sb("/exec"), keyA, "{\"command\": \"echo x > " + name + "\"}");
    call[0] =
        CompletableFuture.supplyAsync(
            () -> http.json("POST", sb("/exec"), keyA, "{\"command\": \"rm " + name + "\"}"));
    JsonNode[] found = {null};
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              JsonNode list = http.get("/v1/approvals", keyA).json().get("approvals");
              found[0] = list.size() > 0 ? list.get(0) : null;
              return found[0] != null;
            });
    return found[0];
  }

  @Test
  @SuppressWarnings("unchecked")
  void aRiskyOperationWaitsUntilItsTenantDeniesOrApprovesIt() throws Exception {
    CompletableFuture<Http.Reply>[] call = new CompletableFuture[1];
    JsonNode q = ask("kept.txt", call);
    assertThat(q.get("sandboxId").asText()).isEqualTo(sandbox);
    assertThat(q.get("kind").asText()).isNotEmpty();
    // Another tenant neither sees nor answers it.
    assertThat(http.get("/v1/approvals", keyB).json().get("approvals").size()).isZero();
    String id = q.get("id").asText();
    Http.Reply stolen =
        http.json("POST", "/v1/approvals/" + id, keyB, "{\"approve\": true, \"reason\": \"mine\"}");
    assertThat(stolen.status()).isEqualTo(404);
    assertThat(
            http.json(
                    "POST",
                    "/v1/approvals/" + id,
                    keyA,
                    "{\"approve\": false, \"reason\": \"keep it\"}")
                .status())
        .isEqualTo(204);
    call[0].get(120, TimeUnit.SECONDS);
    assertThat(http.get(sb("/files/content?path=kept.txt"), keyA).status()).isEqualTo(200);
    // Answered once: a second answer finds nothing.
    assertThat(http.json("POST", "/v1/approvals/" + id, keyA, "{\"approve\": true}").status())
        .isEqualTo(404);

    JsonNode q2 = ask("gone.txt", call);
    assertThat(
            http.json("POST", "/v1/approvals/" + q2.get("id").asText(), keyA, "{\"approve\": true}")
                .status())
        .isEqualTo(204);
    Http.Reply rm = call[0].get(120, TimeUnit.SECONDS);
    assertThat(rm.json().get("exitCode").asInt()).as(rm.text()).isZero();
    assertThat(http.get(sb("/files/content?path=gone.txt"), keyA).status()).isEqualTo(404);
  }

  @Test
  void hostileAnswersAreRefused() {
    assertThat(http.json("POST", "/v1/approvals/apr_nope", keyA, "{\"approve\": true}").status())
        .isEqualTo(404);
    Http.Reply malformed = http.json("POST", "/v1/approvals/apr_nope", keyA, "{\"approve\": ");
    assertThat(malformed.errorCode()).isEqualTo("malformed_json");
    Http.Reply type = http.json("POST", "/v1/approvals/apr_nope", keyA, "{\"approve\": \"yes\"}");
    assertThat(type.errorCode()).isEqualTo("invalid_field");
    Http.Reply longReason =
        http.json(
            "POST",
            "/v1/approvals/apr_nope",
            keyA,
            "{\"approve\": false, \"reason\": \"" + "r".repeat(3000) + "\"}");
    assertThat(longReason.status()).isEqualTo(400);
    Http.Reply badMode =
        http.json("POST", "/v1/sandboxes", keyA, "{\"approvals\": \"allow-everything\"}");
    assertThat(badMode.status()).as(badMode.text()).isEqualTo(400);
    assertThat(badMode.errorCode()).isEqualTo("invalid_field");
  }
}
