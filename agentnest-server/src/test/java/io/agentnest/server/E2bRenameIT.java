package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.e2b.E2bEnvd;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.Tenant;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A move onto an existing file is a deletion of that file for approvals (issue 42, item 17). The
 * attack: under recommended approvals, E2B's {@code files.rename} (Connect {@code
 * filesystem.Filesystem/Move}) and {@code mv} through exec onto an existing file replaced it
 * without a question. Now each asks; denied, the target keeps its content. A move onto nothing asks
 * nothing.
 */
@ExtendWith(DockerEngineRequired.class)
class E2bRenameIT {
  @TempDir Path dir;

  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @Test
  void renameOrMvOntoAnExistingFileAsksAndDeniedKeepsIt() throws Exception {
    try (TestServer running = TestServer.loopback(dir)) {
      String key = running.key(new Tenant("alpha", 2, 2L << 30, 2, 1000, null, null));
      Http http = running.http();
      HttpResponse<String> made =
          client.send(
              HttpRequest.newBuilder(URI.create(http.base + "/e2b/sandboxes"))
                  .timeout(Duration.ofSeconds(120))
                  .header("X-API-KEY", key)
                  .header("Content-Type", "application/json")
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"templateID\": \"base\", \"metadata\": {\"agentnest.approvals\":"
                              + " \"recommended\"}}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
      JsonNode sb = Wire.JSON.readTree(made.body());
      String id = sb.get("sandboxID").asText();
      String token = sb.get("envdAccessToken").asText();
      put(http, key, id, "a.txt", "new");
      put(http, key, id, "b.txt", "precious");

      // files.rename onto b.txt: a question, denied, and b.txt keeps its content.
      CompletableFuture<HttpResponse<String>> rename =
          CompletableFuture.supplyAsync(() -> move(http, id, token, "a.txt", "b.txt"));
      deny(http, key, id, rename);
      HttpResponse<String> refused = rename.get(120, TimeUnit.SECONDS);
      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
      assertThat(content(http, key, id, "b.txt")).isEqualTo("precious");

      // mv through exec onto b.txt: the same.
      CompletableFuture<Http.Reply> mv =
          CompletableFuture.supplyAsync(
              () ->
                  http.json(
                      "POST",
                      "/v1/sandboxes/" + id + "/exec",
                      key,
                      "{\"command\": \"mv a.txt b.txt\"}"));
      deny(http, key, id, mv);
      mv.get(120, TimeUnit.SECONDS);
      assertThat(content(http, key, id, "b.txt")).isEqualTo("precious");

      // Onto nothing: no question, the move happens.
      HttpResponse<String> moved = move(http, id, token, "a.txt", "c.txt");
      assertThat(moved.statusCode()).as(moved.body()).isEqualTo(200);
      assertThat(content(http, key, id, "c.txt")).isEqualTo("new");
      assertThat(http.get("/v1/approvals", key).json().get("approvals").size()).isZero();
    }
  }

  /** Waits for the sandbox's question (failing if {@code call} finished without one), denies it. */
  private static void deny(Http http, String key, String id, CompletableFuture<?> call) {
    String[] question = {null};
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              for (JsonNode q : http.get("/v1/approvals", key).json().get("approvals")) {
                if (q.get("sandboxId").asText().equals(id)) {
                  question[0] = q.get("id").asText();
                  return true;
                }
              }
              return call.isDone();
            });
    assertThat(question[0]).as("the move onto an existing file asked nothing").isNotNull();
    assertThat(
            http.json(
                    "POST",
                    "/v1/approvals/" + question[0],
                    key,
                    "{\"approve\": false, \"reason\": \"keep it\"}")
                .status())
        .isEqualTo(204);
  }

  private HttpResponse<String> move(Http http, String id, String token, String from, String to) {
    try {
      return client.send(
          HttpRequest.newBuilder(URI.create(http.base + "/e2b/sandbox/filesystem.Filesystem/Move"))
              .timeout(Duration.ofSeconds(120))
              .header("E2b-Sandbox-Id", id)
              .header("E2b-Sandbox-Port", Integer.toString(E2bEnvd.ENVD_PORT))
              .header("X-Access-Token", token)
              .header("Content-Type", "application/json")
              .POST(
                  HttpRequest.BodyPublishers.ofString(
                      "{\"source\": \"/home/user/"
                          + from
                          + "\", \"destination\": \"/home/user/"
                          + to
                          + "\"}"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static void put(Http http, String key, String id, String path, String text) {
    Http.Reply r =
        http.send(
            "PUT",
            "/v1/sandboxes/" + id + "/files/content?path=" + path,
            key,
            text.getBytes(StandardCharsets.UTF_8),
            "application/octet-stream");
    assertThat(r.status()).as(r.text()).isIn(200, 201, 204);
  }

  private static String content(Http http, String key, String id, String path) {
    Http.Reply r = http.get("/v1/sandboxes/" + id + "/files/content?path=" + path, key);
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    return r.text();
  }
}
