package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server on the real engine through the real HTTP stack (Javalin/Jetty on loopback, an
 * ephemeral port, java.net.http as the client). Every sandbox made here is destroyed: by the test
 * that made it, or by the server's close at the end.
 */
@ExtendWith(DockerEngineRequired.class)
class ServerIT {
  @TempDir static Path dir;

  static TestServer running;
  static TenantStore store;
  static AgentNestServer server;
  static Http http;
  static String keyA;
  static String keyB;
  static String sandboxA;

  @BeforeAll
  static void start() {
    running =
        TestServer.start(
            dir,
            ServerConfig.parse(
                """
                listen: {host: 127.0.0.1, port: 0}
                max_json: 64k
                max_body: 1m
                policy:
                  max_memory: 1g
                  allow_hosts: [example.org]
                """,
                "test"));
    store = running.store();
    server = running.server();
    keyA = running.key(new Tenant("alpha", 3, 2L << 30, 3, 1000, null, null));
    keyB = running.key(new Tenant("beta", 3, 2L << 30, 3, 1000, null, null));
    http = running.http();
    sandboxA = http.created(keyA, "{\"memoryBytes\": 268435456}");
  }

  @AfterAll
  static void stop() {
    if (running != null) {
      running.close();
    }
  }

  static String sb(String rest) {
    return "/v1/sandboxes/" + sandboxA + rest;
  }

  @Test
  void healthIsOpenButEveryOtherRouteNeedsAValidKey() {
    assertThat(http.get("/v1/health", null).status()).isEqualTo(200);
    Http.Reply none = http.get("/v1/sandboxes", null);
    assertThat(none.status()).isEqualTo(401);
    assertThat(none.errorCode()).isEqualTo("unauthenticated");
    assertThat(none.json().at("/error/fix").asText()).contains("Bearer");
    Http.Reply forged = http.get("/v1/sandboxes", "ank_0000000000000000_" + "A".repeat(43));
    assertThat(forged.status()).isEqualTo(401);
    assertThat(http.get("/v1/sandboxes", "not-a-key").status()).isEqualTo(401);
  }

  @Test
  void lifecycleGetListExtendAndDestroy() {
    Http.Reply made = http.json("POST", "/v1/sandboxes", keyB, "{\"ttlSeconds\": 120}");
    assertThat(made.status()).as(made.text()).isEqualTo(201);
    String id = made.json().get("id").asText();
    assertThat(made.json().get("tenant").asText()).isEqualTo("beta");
    Instant expires = Instant.parse(made.json().get("expiresAt").asText());

    assertThat(http.get("/v1/sandboxes/" + id, keyB).status()).isEqualTo(200);
    assertThat(http.get("/v1/sandboxes", keyB).json().get("sandboxes").findValuesAsText("id"))
        .contains(id);
    Http.Reply ext =
        http.json("POST", "/v1/sandboxes/" + id + "/extend", keyB, "{\"seconds\": 60}");
    assertThat(ext.status()).as(ext.text()).isEqualTo(200);
    assertThat(Instant.parse(ext.json().get("expiresAt").asText())).isAfter(expires);

    assertThat(http.delete("/v1/sandboxes/" + id, keyB).status()).isEqualTo(204);
    assertThat(http.get("/v1/sandboxes/" + id, keyB).status()).isEqualTo(404);
    assertThat(http.delete("/v1/sandboxes/" + id, keyB).status()).isEqualTo(404);
  }

  @Test
  void execAndCodeAnswerAsJson() {
    Http.Reply sh =
        http.json("POST", sb("/exec"), keyA, "{\"command\": \"echo hi; echo err >&2; exit 3\"}");
    assertThat(sh.status()).as(sh.text()).isEqualTo(200);
    assertThat(sh.json().get("stdout").asText()).isEqualTo("hi\n");
    assertThat(sh.json().get("stderr").asText()).isEqualTo("err\n");
    assertThat(sh.json().get("exitCode").asInt()).isEqualTo(3);

    Http.Reply argv =
        http.json("POST", sb("/exec"), keyA, "{\"argv\": [\"printf\", \"%s\", \"a b\"]}");
    assertThat(argv.json().get("stdout").asText()).isEqualTo("a b");

    http.json("POST", sb("/code"), keyA, "{\"code\": \"a = 10\", \"session\": \"s1\"}");
    Http.Reply code =
        http.json(
            "POST", sb("/code"), keyA, "{\"code\": \"print(a * 2); a + 1\", \"session\": \"s1\"}");
    assertThat(code.json().get("stdout").asText()).isEqualTo("20\n");
    assertThat(code.json().get("result").asText()).isEqualTo("11");

    Http.Reply err = http.json("POST", sb("/code"), keyA, "{\"code\": \"1/0\"}");
    assertThat(err.json().at("/error/name").asText()).isEqualTo("ZeroDivisionError");
  }

  @Test
  void execStreamsServerSentEventsThenTheResult() throws Exception {
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(http.base + sb("/exec")))
            .header("Authorization", "Bearer " + keyA)
            .header("Accept", "text/event-stream")
            .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"echo one; echo two >&2\"}"))
            .build();
    HttpResponse<Stream<String>> r = http.client.send(req, HttpResponse.BodyHandlers.ofLines());
    assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
    List<String> lines = r.body().limit(200).toList();
    assertThat(lines).contains("event: stdout", "event: stderr", "event: result");
    String result = lines.get(lines.indexOf("event: result") + 1);
    assertThat(result).startsWith("data: ").contains("\"exitCode\":0");
  }

  @Test
  void aStreamWhoseSandboxIsDestroyedUnderItEndsWithAnErrorEventNotSilence() throws Exception {
    String id = http.created(keyB, "{\"ttlSeconds\": 120}");
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(http.base + "/v1/sandboxes/" + id + "/exec"))
            .header("Authorization", "Bearer " + keyB)
            .header("Accept", "text/event-stream")
            .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"echo up; sleep 60\"}"))
            .build();
    HttpResponse<InputStream> r = http.client.send(req, HttpResponse.BodyHandlers.ofInputStream());
    List<String> lines = new ArrayList<>();
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null && lines.size() < 50 && !line.contains("up")) {
        lines.add(line);
      }
      assertThat(http.delete("/v1/sandboxes/" + id, keyB).status()).isEqualTo(204);
      while ((line = in.readLine()) != null && lines.size() < 200) {
        lines.add(line);
      }
    }
    // The failure as the last event, the error body a whole answer would have had: never a
    // stream that just stops, which a client cannot tell from a dropped connection.
    int error = lines.indexOf("event: error");
    assertThat(error).as(String.join("\n", lines)).isGreaterThanOrEqualTo(0);
    assertThat(lines.get(error + 1))
        .startsWith("data: ")
        .contains("\"status\":")
        .contains("\"code\":")
        .contains("\"fix\":");
    assertThat(lines).doesNotContain("event: result");
  }

  @Test
  void filesGoUpAndDownAndAreListedAndDeleted() {
    Http.Reply up =
        http.send(
            "PUT",
            sb("/files/content?path=data/in.txt"),
            keyA,
            "hello".getBytes(StandardCharsets.UTF_8),
            "application/octet-stream");
    assertThat(up.status()).as(up.text()).isEqualTo(201);
    assertThat(up.json().get("size").asLong()).isEqualTo(5);
    Http.Reply down = http.get(sb("/files/content?path=data/in.txt"), keyA);
    assertThat(down.status()).isEqualTo(200);
    assertThat(down.text()).isEqualTo("hello");
    assertThat(http.get(sb("/files?path=data"), keyA).json().get("files").findValuesAsText("path"))
        .anyMatch(p -> p.endsWith("in.txt"));
    assertThat(http.delete(sb("/files?path=data&recursive=true"), keyA).status()).isEqualTo(204);
    Http.Reply gone = http.get(sb("/files/content?path=data/in.txt"), keyA);
    assertThat(gone.status()).isEqualTo(404);
    assertThat(gone.json().at("/error/reason").asText()).isEqualTo("NOT_FOUND");
  }

  @Test
  void tenantsCannotSeeOrTouchEachOthersSandboxes() {
    assertThat(http.get("/v1/sandboxes", keyB).json().get("sandboxes").findValuesAsText("id"))
        .doesNotContain(sandboxA);
    for (Http.Reply r :
        List.of(
            http.get(sb(""), keyB),
            http.delete(sb(""), keyB),
            http.json("POST", sb("/exec"), keyB, "{\"command\": \"id\"}"),
            http.get(sb("/files/content?path=x"), keyB))) {
      assertThat(r.status()).as(r.text()).isEqualTo(404);
      assertThat(r.errorCode()).isEqualTo("not_found");
    }
    assertThat(http.get(sb(""), keyA).status()).isEqualTo(200);
  }

  @Test
  void quotaExhaustionIsA429NamingTheQuotaAndRecoversAfterADestroy() {
    String key = store.add(new Tenant("gamma", 1, 1L << 30, 2, 1000, null, null), null);
    Http.Reply first = http.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 268435456}");
    assertThat(first.status()).as(first.text()).isEqualTo(201);
    String id = first.json().get("id").asText();
    try {
      Http.Reply second = http.json("POST", "/v1/sandboxes", key, "{}");
      assertThat(second.status()).isEqualTo(429);
      assertThat(second.json().at("/error/quota").asText()).isEqualTo("sandboxes");
      assertThat(second.json().at("/error/used").asInt()).isEqualTo(1);
      assertThat(second.json().at("/error/limit").asInt()).isEqualTo(1);
      assertThat(second.raw().headers().firstValue("Retry-After")).isPresent();
      Http.Reply usage = http.get("/v1/tenant", key);
      assertThat(usage.json().at("/usage/sandboxes").asInt()).isEqualTo(1);
    } finally {
      assertThat(http.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(204);
    }
    Http.Reply memory = http.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 2147483648}");
    assertThat(memory.status()).isEqualTo(422); // over the server's 1g per sandbox: policy
    Http.Reply again = http.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 268435456}");
    assertThat(again.status()).as(again.text()).isEqualTo(201);
    assertThat(http.delete("/v1/sandboxes/" + again.json().get("id").asText(), key).status())
        .isEqualTo(204);
  }

  @Test
  void requestsPerSecondQuotaAnswers429() {
    String key = store.add(new Tenant("slow", 1, 1L << 30, 1, 2, null, null), null);
    List<Integer> statuses = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      statuses.add(http.get("/v1/tenant", key).status());
    }
    assertThat(statuses).contains(200, 429);
    Http.Reply limited = null;
    for (int i = 0; i < 12 && limited == null; i++) {
      Http.Reply r = http.get("/v1/tenant", key);
      limited = r.status() == 429 ? r : null;
    }
    assertThat(limited).isNotNull();
    assertThat(limited.json().at("/error/quota").asText()).isEqualTo("requests_per_second");
  }

  @Test
  void executionsPerMinuteQuotaAnswers429NamingItAndItsUseAndSparesOtherTenants() {
    String key = store.add(new Tenant("busy", 1, 1L << 30, 1, 1000, null, null, 3), null);
    Http.Reply made = http.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 268435456}");
    assertThat(made.status()).as(made.text()).isEqualTo(201);
    String id = made.json().get("id").asText();
    try {
      assertThat(
              http.json("POST", "/v1/sandboxes/" + id + "/exec", key, "{\"command\": \"true\"}")
                  .status())
          .isEqualTo(200);
      assertThat(
              http.json("POST", "/v1/sandboxes/" + id + "/code", key, "{\"code\": \"1\"}").status())
          .isEqualTo(200);
      assertThat(
              http.json("POST", "/v1/sandboxes/" + id + "/code", key, "{\"code\": \"2\"}").status())
          .isEqualTo(200);
      Http.Reply over =
          http.json("POST", "/v1/sandboxes/" + id + "/exec", key, "{\"command\": \"true\"}");
      assertThat(over.status()).as(over.text()).isEqualTo(429);
      assertThat(over.json().at("/error/quota").asText()).isEqualTo("executions_per_minute");
      assertThat(over.json().at("/error/limit").asInt()).isEqualTo(3);
      assertThat(over.json().at("/error/used").asInt()).isEqualTo(3);
      assertThat(over.json().at("/error/message").asText()).contains("executions_per_minute");
      Http.Reply tenant = http.get("/v1/tenant", key);
      assertThat(tenant.json().get("executionsPerMinute").asInt()).isEqualTo(3);
      assertThat(tenant.json().get("executionsLastMinute").asInt()).isEqualTo(3);
      // Other tenants keep their own count.
      assertThat(http.json("POST", sb("/exec"), keyA, "{\"command\": \"true\"}").status())
          .isEqualTo(200);
    } finally {
      assertThat(http.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(204);
    }
  }

  @Test
  void aRevokedOrExpiredKeyIsRefusedAtOnce() {
    String key = store.issueKey("alpha", null);
    assertThat(http.get(sb(""), key).status()).isEqualTo(200);
    assertThat(store.revoke(key)).isTrue();
    Http.Reply r = http.get(sb(""), key);
    assertThat(r.status()).isEqualTo(401);
    assertThat(r.errorCode()).isEqualTo("key_revoked");
    String expired = store.issueKey("alpha", Instant.now().minusSeconds(1));
    assertThat(http.get(sb(""), expired).errorCode()).isEqualTo("key_expired");
    assertThat(http.get(sb(""), keyA).status()).isEqualTo(200);
  }

  @Test
  void aClientThatDisconnectsMidStreamCancelsTheExecution() throws Exception {
    String marker = "mark" + System.nanoTime();
    String cmd =
        "{\"command\": \"for i in $(seq 1 600); do echo " + marker + " $i; sleep 0.1; done\"}";
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(http.base + sb("/exec")))
            .header("Authorization", "Bearer " + keyA)
            .header("Accept", "text/event-stream")
            .POST(HttpRequest.BodyPublishers.ofString(cmd))
            .build();
    HttpResponse<InputStream> r = http.client.send(req, HttpResponse.BodyHandlers.ofInputStream());
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
      String line;
      int read = 0;
      while ((line = in.readLine()) != null && read++ < 50 && !line.contains(marker)) {
        // read until the command is surely running
      }
      assertThat(line).contains(marker);
    }
    // The loop would run for a minute; the server must stop it once the client is gone.
    await()
        .atMost(Duration.ofSeconds(40))
        .pollInterval(Duration.ofMillis(500))
        .until(
            () ->
                !http.json(
                        "POST",
                        sb("/exec"),
                        keyA,
                        "{\"command\": \"cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\\\0' ' '\"}")
                    .json()
                    .get("stdout")
                    .asText()
                    .contains(marker));
  }

  @Test
  void badInputGetsAClearJsonError() {
    Http.Reply malformed = http.json("POST", sb("/exec"), keyA, "{\"command\": ");
    assertThat(malformed.status()).isEqualTo(400);
    assertThat(malformed.errorCode()).isEqualTo("malformed_json");
    assertThat(malformed.json().at("/error/fix").asText()).contains("command");

    Http.Reply unknown = http.json("POST", sb("/exec"), keyA, "{\"comand\": \"ls\"}");
    assertThat(unknown.status()).isEqualTo(400);
    assertThat(unknown.errorCode()).isEqualTo("unknown_field");
    assertThat(unknown.json().at("/error/message").asText()).contains("comand");
    assertThat(unknown.json().at("/error/fix").asText()).contains("command");

    Http.Reply wrongType = http.json("POST", sb("/exec"), keyA, "{\"command\": [1]}");
    assertThat(wrongType.errorCode()).isEqualTo("invalid_field");

    Http.Reply both =
        http.json("POST", sb("/exec"), keyA, "{\"command\": \"ls\", \"argv\": [\"ls\"]}");
    assertThat(both.errorCode()).isEqualTo("invalid_field");

    String big = "{\"command\": \"" + "x".repeat(70_000) + "\"}";
    Http.Reply tooBig = http.json("POST", sb("/exec"), keyA, big);
    assertThat(tooBig.status()).isEqualTo(413);
    assertThat(tooBig.errorCode()).isEqualTo("body_too_large");

    Http.Reply bigFile =
        http.send(
            "PUT",
            sb("/files/content?path=big.bin"),
            keyA,
            new byte[(1 << 20) + 1],
            "application/octet-stream");
    assertThat(bigFile.status()).isEqualTo(413);

    Http.Reply route = http.get("/v1/nothing-here", keyA);
    assertThat(route.status()).isEqualTo(404);
    assertThat(route.errorCode()).isEqualTo("not_found");

    Http.Reply method = http.send("PATCH", sb(""), keyA, new byte[0], "");
    assertThat(method.status()).isEqualTo(405);
    assertThat(method.errorCode()).isEqualTo("method_not_allowed");

    Http.Reply policy = http.json("POST", "/v1/sandboxes", keyA, "{\"image\": \"alpine:latest\"}");
    assertThat(policy.status()).isEqualTo(422);
    assertThat(policy.json().at("/error/fix").asText()).contains("agentnest/python:latest");
    Http.Reply host =
        http.json("POST", "/v1/sandboxes", keyA, "{\"allowHosts\": [\"evil.example.com\"]}");
    assertThat(host.status()).isEqualTo(422);
    assertThat(host.json().at("/error/field").asText()).isEqualTo("allowHosts");
  }

  @Test
  void aHeaderFloodIsRefusedByJettyBeforeAnyHandler() throws Exception {
    try (Socket s =
        new Socket(
            "127.0.0.1", Integer.parseInt(http.base.substring(http.base.lastIndexOf(':') + 1)))) {
      s.setSoTimeout(10_000);
      StringBuilder req = new StringBuilder("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      for (int i = 0; i < 200; i++) {
        req.append("X-Flood-").append(i).append(": ").append("y".repeat(200)).append("\r\n");
      }
      req.append("\r\n");
      s.getOutputStream().write(req.toString().getBytes(StandardCharsets.US_ASCII));
      String status =
          new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII))
              .readLine();
      assertThat(status).contains("431");
    }
  }

  @Test
  void pathTraversalInFileRoutesIsRefusedWithBadPath() {
    for (String path :
        List.of(
            "../etc/passwd",
            "/etc/passwd",
            "a/../../etc/passwd",
            "%2e%2e/etc/passwd",
            "..%2Fetc%2Fpasswd")) {
      Http.Reply r = http.get(sb("/files/content?path=" + path), keyA);
      assertThat(r.status()).as(path + ": " + r.text()).isEqualTo(400);
      assertThat(r.errorCode()).isEqualTo("bad_path");
      assertThat(r.text()).doesNotContain("root:");
    }
    Http.Reply up =
        http.send(
            "PUT",
            sb("/files/content?path=../../tmp/x"),
            keyA,
            new byte[] {1},
            "application/octet-stream");
    assertThat(up.errorCode()).isEqualTo("bad_path");
    // A symlink made inside the sandbox does not lead the file routes outside the workspace.
    http.json("POST", sb("/exec"), keyA, "{\"command\": \"ln -sf /etc/passwd /workspace/link\"}");
    Http.Reply link = http.get(sb("/files/content?path=link"), keyA);
    assertThat(link.status()).as(link.text()).isBetween(400, 499);
    assertThat(link.text()).doesNotContain("root:");
  }

  @Test
  void aTenantPolicyTightensButNeverLoosensTheServers() {
    String key =
        store.add(
            new Tenant(
                "tight",
                2,
                4L << 30,
                2,
                1000,
                256L << 20,
                List.of("example.org", "other.example.net")),
            null);
    Http.Reply over = http.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 536870912}");
    assertThat(over.status()).isEqualTo(422);
    assertThat(over.json().at("/error/fix").asText()).contains(String.valueOf(256L << 20));
    // The tenant lists a host the server does not allow: it stays refused.
    Http.Reply host =
        http.json(
            "POST",
            "/v1/sandboxes",
            key,
            "{\"memoryBytes\": 134217728, \"allowHosts\": [\"other.example.net\"]}");
    assertThat(host.status()).isEqualTo(422);
  }

  @Test
  void aRestartedServerReadoptsItsTenantsSandboxesFromTheirLabels() {
    Path home = dir.resolve("restart");
    ServerConfig config = ServerConfig.defaults().withListen("127.0.0.1", 0);
    String key;
    String id;
    try (TenantStore first = TenantStore.open(home.resolve("tenants.db"), Clock.systemUTC())) {
      key = first.add(new Tenant("delta", 2, 1L << 30, 2, 1000, null, null), null);
      AgentNestServer before = new AgentNestServer(config, first);
      Http h = new Http(before.start());
      Http.Reply made = h.json("POST", "/v1/sandboxes", key, "{\"memoryBytes\": 134217728}");
      assertThat(made.status()).as(made.text()).isEqualTo(201);
      id = made.json().get("id").asText();
      h.json("POST", "/v1/sandboxes/" + id + "/exec", key, "{\"command\": \"echo kept > k\"}");
      before.close();
    }
    // Another server's sandboxes (another store) are not taken over by this one.
    assertThat(http.get("/v1/sandboxes/" + id, keyA).status()).isEqualTo(404);
    try (TenantStore second = TenantStore.open(home.resolve("tenants.db"), Clock.systemUTC())) {
      AgentNestServer after = new AgentNestServer(config, second);
      try {
        Http h = new Http(after.start());
        assertThat(h.get("/v1/sandboxes", key).json().get("sandboxes").findValuesAsText("id"))
            .containsExactly(id);
        Http.Reply file = h.get("/v1/sandboxes/" + id + "/files/content?path=k", key);
        assertThat(file.text()).as(file.text()).isEqualTo("kept\n");
        Http.Reply run =
            h.json("POST", "/v1/sandboxes/" + id + "/code", key, "{\"code\": \"6 * 7\"}");
        assertThat(run.json().get("result").asText()).as(run.text()).isEqualTo("42");
        // Adopted sandboxes count against the quota like the ones this server made.
        assertThat(h.get("/v1/tenant", key).json().at("/usage/sandboxes").asInt()).isEqualTo(1);
        assertThat(h.delete("/v1/sandboxes/" + id, key).status()).isEqualTo(204);
      } finally {
        after.destroyAll();
        after.close();
      }
    }
  }
}
