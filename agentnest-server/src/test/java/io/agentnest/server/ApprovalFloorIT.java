package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator's approvals floor holds for every sandbox the server gets hold of, not only the ones
 * it creates. The attack: a sandbox made and a snapshot saved while the server had no floor; the
 * operator restarts the server with {@code policy.approvals: recommended}; then the adopted
 * sandbox, a restore of the old snapshot and a fork of each delete a file. Each must ask first
 * (before the fix all three deleted without a question).
 */
@ExtendWith(DockerEngineRequired.class)
class ApprovalFloorIT {
  @TempDir Path dir;

  static final String LISTEN = "listen: {host: 127.0.0.1, port: 0}\n";

  @Test
  void restoreForkAndAdoptionKeepAskingUnderTheCurrentFloor() throws Exception {
    String snapshot = "floor" + Long.toHexString(System.nanoTime());
    TenantStore first = TenantStore.open(dir.resolve("tenants.db"), Clock.systemUTC());
    AgentNestServer before = new AgentNestServer(ServerConfig.parse(LISTEN, "before"), first);
    String key = first.add(new Tenant("alpha", 8, 4L << 30, 4, 1000, null, null), null);
    String old;
    try {
      Http http = new Http(before.start());
      old = http.created(key, "{\"memoryBytes\": 268435456}");
      Http.Reply saved =
          http.json(
              "POST",
              "/v1/sandboxes/" + old + "/snapshots",
              key,
              "{\"name\": \"" + snapshot + "\"}");
      assertThat(saved.status()).as(saved.text()).isEqualTo(201);
    } finally {
      // A restart: the sandbox keeps running for the next server to adopt.
      before.close();
      first.close();
    }

    TestServer after =
        TestServer.start(
            dir,
            ServerConfig.parse(LISTEN + "policy:\n  approvals:\n    base: recommended\n", "after"));
    Http http = after.http();
    try {
      assertThat(after.server().sandboxCount()).as("the old sandbox was adopted").isEqualTo(1);
      assertAsksBeforeDeleting(http, key, old, "adopted");

      Http.Reply restored = http.json("POST", "/v1/snapshots/" + snapshot + "/restore", key, "{}");
      assertThat(restored.status()).as(restored.text()).isEqualTo(201);
      String copy = restored.json().get("id").asText();
      assertAsksBeforeDeleting(http, key, copy, "restored");

      for (String parent : new String[] {old, copy}) {
        Http.Reply forked = http.json("POST", "/v1/sandboxes/" + parent + "/fork", key, "{}");
        assertThat(forked.status()).as(forked.text()).isEqualTo(201);
        String fork = forked.json().get("sandbox").get("id").asText();
        assertAsksBeforeDeleting(http, key, fork, "fork of " + parent);
      }
    } finally {
      http.delete("/v1/snapshots/" + snapshot, key);
      after.close();
    }
  }

  /** {@code rm} of a file must wait for a question; denied, the file stays. */
  private static void assertAsksBeforeDeleting(Http http, String key, String id, String what)
      throws Exception {
    String sb = "/v1/sandboxes/" + id;
    Http.Reply made = http.json("POST", sb + "/exec", key, "{\"command\": \"echo x > keep.txt\"}");
    assertThat(made.status()).as(made.text()).isEqualTo(200);
    CompletableFuture<Http.Reply> rm =
        CompletableFuture.supplyAsync(
            () -> http.json("POST", sb + "/exec", key, "{\"command\": \"rm -f keep.txt\"}"));
    JsonNode[] question = {null};
    await()
        .alias("the " + what + " sandbox asks before rm")
        .atMost(Duration.ofSeconds(60))
        .until(
            () -> {
              if (rm.isDone()) {
                return true;
              }
              for (JsonNode q : http.get("/v1/approvals", key).json().get("approvals")) {
                if (q.get("sandboxId").asText().equals(id)) {
                  question[0] = q;
                  return true;
                }
              }
              return false;
            });
    assertThat(question[0])
        .as("the %s sandbox ran rm without asking: %s", what, rm.isDone() ? rm.get().text() : "")
        .isNotNull();
    Http.Reply denied =
        http.json(
            "POST",
            "/v1/approvals/" + question[0].get("id").asText(),
            key,
            "{\"approve\": false, \"reason\": \"keep it\"}");
    assertThat(denied.status()).isEqualTo(204);
    rm.get(120, TimeUnit.SECONDS);
    assertThat(http.get(sb + "/files/content?path=keep.txt", key).status())
        .as("the %s sandbox deleted the file", what)
        .isEqualTo(200);
  }
}
