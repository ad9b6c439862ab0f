package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fork, snapshots and artifacts over the real HTTP stack on the real engine: each works for its
 * tenant, is invisible (404) to another, and refuses hostile input (oversized or malformed bodies,
 * traversal in names and globs) before anything reaches the sandbox or the snapshot store.
 */
@ExtendWith(DockerEngineRequired.class)
class StateRoutesIT {
  @TempDir static Path dir;

  static TestServer running;
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
                max_json: 4k
                policy:
                  max_memory: 1g
                """,
                "test"));
    keyA = running.key(new Tenant("alpha", 4, 2L << 30, 4, 1000, null, null));
    keyB = running.key(new Tenant("beta", 2, 1L << 30, 2, 1000, null, null));
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
  void aForkIsAnIndependentCopyCountedAgainstTheQuota() {
    http.json("POST", sb("/code"), keyA, "{\"code\": \"fork_me = 41\"}");
    http.json("POST", sb("/exec"), keyA, "{\"command\": \"echo parent > f.txt\"}");
    Http.Reply made = http.json("POST", sb("/fork"), keyA, "");
    assertThat(made.status()).as(made.text()).isEqualTo(201);
    String copy = made.json().at("/sandbox/id").asText();
    assertThat(made.json().get("mode").asText()).isIn("checkpoint", "state_transfer");
    try {
      Http.Reply value =
          http.json("POST", "/v1/sandboxes/" + copy + "/code", keyA, "{\"code\": \"fork_me + 1\"}");
      assertThat(value.json().get("result").asText()).as(value.text()).isEqualTo("42");
      http.json(
          "POST", "/v1/sandboxes/" + copy + "/exec", keyA, "{\"command\": \"echo c > f.txt\"}");
      Http.Reply parent = http.get(sb("/files/content?path=f.txt"), keyA);
      assertThat(parent.text()).isEqualTo("parent\n");
      assertThat(http.get("/v1/tenant", keyA).json().at("/usage/sandboxes").asInt())
          .isGreaterThanOrEqualTo(2);
    } finally {
      assertThat(http.delete("/v1/sandboxes/" + copy, keyA).status()).isEqualTo(204);
    }
  }

  @Test
  void aSnapshotIsSavedListedRestoredAndDeletedUnderTheTenantsOwnName() {
    http.json("POST", sb("/code"), keyA, "{\"code\": \"saved = 'kept'\"}");
    try {
      saveListRestoreDelete();
    } finally {
      http.delete("/v1/snapshots/snap-1", keyA);
    }
  }

  private void saveListRestoreDelete() {
    Http.Reply saved = http.json("POST", sb("/snapshots"), keyA, "{\"name\": \"snap-1\"}");
    assertThat(saved.status()).as(saved.text()).isEqualTo(201);
    assertThat(saved.json().get("name").asText()).isEqualTo("snap-1");

    Http.Reply again = http.json("POST", sb("/snapshots"), keyA, "{\"name\": \"snap-1\"}");
    assertThat(again.status()).as(again.text()).isEqualTo(409);
    assertThat(again.json().at("/error/reason").asText()).isEqualTo("EXISTS");
    assertThat(again.text()).doesNotContain("alpha.snap-1").doesNotContain(dir.toString());

    assertThat(http.get("/v1/snapshots", keyA).json().get("snapshots").findValuesAsText("name"))
        .contains("snap-1");
    assertThat(http.get("/v1/snapshots", keyB).json().get("snapshots").findValuesAsText("name"))
        .doesNotContain("snap-1");

    Http.Reply restored = http.json("POST", "/v1/snapshots/snap-1/restore", keyA, "");
    assertThat(restored.status()).as(restored.text()).isEqualTo(201);
    String id = restored.json().get("id").asText();
    try {
      Http.Reply v =
          http.json("POST", "/v1/sandboxes/" + id + "/code", keyA, "{\"code\": \"saved\"}");
      assertThat(v.json().get("result").asText()).as(v.text()).isEqualTo("'kept'");
    } finally {
      http.delete("/v1/sandboxes/" + id, keyA);
    }
    assertThat(http.delete("/v1/snapshots/snap-1", keyA).status()).isEqualTo(204);
    assertThat(http.delete("/v1/snapshots/snap-1", keyA).status()).isEqualTo(404);
  }

  @Test
  void anotherTenantsSnapshotAndSandboxAre404ForEveryStateRoute() {
    Http.Reply saved = http.json("POST", sb("/snapshots"), keyA, "{\"name\": \"private\"}");
    assertThat(saved.status()).as(saved.text()).isEqualTo(201);
    try {
      for (Http.Reply r :
          List.of(
              http.json("POST", "/v1/snapshots/private/restore", keyB, ""),
              http.delete("/v1/snapshots/private", keyB),
              http.json("POST", sb("/fork"), keyB, ""),
              http.json("POST", sb("/snapshots"), keyB, "{\"name\": \"stolen\"}"),
              http.get(sb("/artifacts"), keyB))) {
        assertThat(r.status()).as(r.text()).isEqualTo(404);
        assertThat(r.errorCode()).isEqualTo("not_found");
      }
      // The stored name is "alpha.private": spelling it out does not reach it either.
      Http.Reply spelled = http.json("POST", "/v1/snapshots/alpha.private/restore", keyB, "");
      assertThat(spelled.status()).as(spelled.text()).isEqualTo(400);
      assertThat(http.get("/v1/snapshots", keyA).json().get("snapshots").findValuesAsText("name"))
          .contains("private");
    } finally {
      http.delete("/v1/snapshots/private", keyA);
    }
  }

  @Test
  void artifactsListMatchingFilesWithTheirChecksum() {
    http.send(
        "PUT",
        sb("/files/content?path=out/report.txt"),
        keyA,
        "hello".getBytes(StandardCharsets.UTF_8),
        "application/octet-stream");
    Http.Reply r = http.get(sb("/artifacts?glob=out/*.txt"), keyA);
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    assertThat(r.json().get("artifacts").findValuesAsText("path")).contains("out/report.txt");
    assertThat(r.json().get("artifacts").findValuesAsText("sha256"))
        .contains("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  }

  @Test
  void theAuditOfAnOwnSandboxIsReadableAndBoundedAndAnotherTenantsIs404() {
    http.json("POST", sb("/exec"), keyA, "{\"command\": \"echo audited\"}");
    Http.Reply r = http.get(sb("/audit?type=exec.finished&limit=5"), keyA);
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    assertThat(r.json().get("events").size()).isBetween(1, 5);
    assertThat(r.json().get("events").findValuesAsText("type")).containsOnly("exec.finished");
    assertThat(http.get(sb("/audit"), keyB).status()).isEqualTo(404);
    for (String bad :
        List.of("type=nope", "limit=0", "limit=1001", "limit=abc", "since=yesterday")) {
      Http.Reply refused = http.get(sb("/audit?" + bad), keyA);
      assertThat(refused.status()).as(bad + ": " + refused.text()).isEqualTo(400);
      assertThat(refused.errorCode()).isEqualTo("invalid_field");
    }
  }

  @Test
  void hostileInputIsRefusedBeforeItReachesTheSandboxOrTheStore() {
    // Traversal and absolute paths in globs.
    for (String glob : List.of("../**", "%2e%2e/etc/*", "/etc/*", "a/../../b")) {
      Http.Reply r = http.get(sb("/artifacts?glob=" + glob), keyA);
      assertThat(r.status()).as(glob + ": " + r.text()).isEqualTo(400);
      assertThat(r.errorCode()).isEqualTo("bad_path");
    }
    // Snapshot names that would leave the tenant's prefix or the store's directory.
    for (String name : List.of("../x", "a/b", ".hidden", "beta.x", "x".repeat(37), "")) {
      Http.Reply r =
          http.json(
              "POST", sb("/snapshots"), keyA, "{\"name\": \"" + name.replace("\\", "\\\\") + "\"}");
      assertThat(r.status()).as(name + ": " + r.text()).isEqualTo(400);
      assertThat(r.errorCode()).isEqualTo("invalid_field");
    }
    for (String path : List.of("..%2Fx", "%2e%2e", "a.b")) {
      Http.Reply r = http.json("POST", "/v1/snapshots/" + path + "/restore", keyA, "");
      assertThat(r.status()).as(path + ": " + r.text()).isIn(400, 404);
    }
    // Malformed, unknown-field, wrong-type and oversized bodies.
    Http.Reply malformed = http.json("POST", sb("/snapshots"), keyA, "{\"name\": ");
    assertThat(malformed.status()).isEqualTo(400);
    assertThat(malformed.errorCode()).isEqualTo("malformed_json");
    Http.Reply unknown = http.json("POST", sb("/snapshots"), keyA, "{\"name\": \"a\", \"x\": 1}");
    assertThat(unknown.errorCode()).isEqualTo("unknown_field");
    Http.Reply type = http.json("POST", sb("/snapshots"), keyA, "{\"name\": [1]}");
    assertThat(type.errorCode()).isEqualTo("invalid_field");
    Http.Reply big =
        http.json("POST", sb("/snapshots"), keyA, "{\"name\": \"" + "a".repeat(8192) + "\"}");
    assertThat(big.status()).isEqualTo(413);
    assertThat(big.errorCode()).isEqualTo("body_too_large");
    assertThat(http.get("/v1/snapshots", keyA).json().get("snapshots").findValuesAsText("name"))
        .allMatch(n -> n.matches("[A-Za-z0-9][A-Za-z0-9_-]{0,35}"))
        .doesNotContain("a", "x".repeat(37));
  }

  @Test
  void theTenantWideAuditKeepsADestroyedSandboxsRecordsAndHidesOtherTenants() {
    String gone = http.created(keyA, "{\"memoryBytes\": 268435456}");
    http.json("POST", "/v1/sandboxes/" + gone + "/exec", keyA, "{\"command\": \"echo audit-me\"}");
    assertThat(http.delete("/v1/sandboxes/" + gone, keyA).status()).isEqualTo(204);
    Http.Reply mine = http.get("/v1/audit?sandbox=" + gone + "&limit=50", keyA);
    assertThat(mine.status()).as(mine.text()).isEqualTo(200);
    assertThat(mine.json().get("events").findValuesAsText("type"))
        .contains("sandbox.created", "exec.finished", "sandbox.destroyed");
    assertThat(mine.json().get("events").findValuesAsText("sandboxId")).containsOnly(gone);
    Http.Reply text = http.get("/v1/audit?text=audit-me", keyA);
    assertThat(text.json().get("events").findValuesAsText("sandboxId")).contains(gone);
    // Another tenant neither reads it by id nor finds it in its own records.
    Http.Reply theirs = http.get("/v1/audit?sandbox=" + gone, keyB);
    assertThat(theirs.status()).isEqualTo(404);
    assertThat(theirs.text()).doesNotContain("audit-me");
    assertThat(http.get("/v1/audit?text=audit-me", keyB).json().get("events")).isEmpty();
    assertThat(http.get("/v1/audit?until=yesterday", keyA).status()).isEqualTo(400);
  }

  @Test
  void labelsAndRuntimesAreCheckedBeforeAnythingStarts() {
    Http.Reply reserved =
        http.json(
            "POST", "/v1/sandboxes", keyA, "{\"labels\": {\"agentnest.expires\": \"9999999999\"}}");
    assertThat(reserved.status()).as(reserved.text()).isEqualTo(400);
    assertThat(reserved.text()).contains("reserved");
    Http.Reply control =
        http.json("POST", "/v1/sandboxes", keyA, "{\"labels\": {\"team\": \"a\\u001b[2Jb\"}}");
    assertThat(control.status()).as(control.text()).isEqualTo(400);
    Http.Reply runtime =
        http.json("POST", "/v1/sandboxes", keyA, "{\"runtime\": \"kata\\u001b[2J\"}");
    assertThat(runtime.status()).as(runtime.text()).isEqualTo(422);
    assertThat(runtime.text())
        .contains("runtime")
        .doesNotContain("\u001b")
        .doesNotContain("\\u001b");
    Http.Reply tmp = http.json("POST", "/v1/sandboxes", keyA, "{\"tmpSizeBytes\": 1099511627776}");
    assertThat(tmp.status()).as(tmp.text()).isEqualTo(422);
    assertThat(http.get("/v1/tenant", keyA).json().at("/usage/sandboxes").asInt())
        .isLessThanOrEqualTo(2);
  }

  @Test
  void anArchiveThatLeavesTheWorkspaceIsRefusedAndAnUnknownExecutionCannotBeCancelled()
      throws Exception {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(buf)) {
      byte[] data = "owned".getBytes(StandardCharsets.UTF_8);
      TarArchiveEntry e = new TarArchiveEntry("../../etc/owned");
      e.setSize(data.length);
      tar.putArchiveEntry(e);
      tar.write(data);
      tar.closeArchiveEntry();
    }
    Http.Reply slip =
        http.send("PUT", sb("/archive?path=in"), keyA, buf.toByteArray(), "application/x-tar");
    assertThat(slip.status()).as(slip.text()).isBetween(400, 499);
    Http.Reply out = http.get(sb("/archive?path=../../etc/passwd"), keyA);
    assertThat(out.status()).as(out.text()).isEqualTo(400);
    assertThat(out.json().at("/error/code").asText()).isEqualTo("bad_path");
    Http.Reply cancel = http.json("POST", sb("/executions/x-unknown/cancel"), keyA, "");
    assertThat(cancel.status()).isEqualTo(404);
    assertThat(http.json("POST", sb("/executions/x-unknown/cancel"), keyB, "").status())
        .isEqualTo(404);
  }

  /** Collects a WebSocket's messages and how it closed. */
  static final class Collect implements WebSocket.Listener {
    final List<String> messages = new CopyOnWriteArrayList<>();
    final CompletableFuture<Integer> closed = new CompletableFuture<>();
    private final StringBuilder part = new StringBuilder();

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      part.append(data);
      if (last) {
        messages.add(part.toString());
        part.setLength(0);
      }
      ws.request(1);
      return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket ws, int status, String reason) {
      closed.complete(status);
      return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
      closed.complete(-1);
    }
  }

  private static CompletableFuture<WebSocket> socket(
      String sandbox, @Nullable String key, Collect listener) {
    WebSocket.Builder b = HttpClient.newHttpClient().newWebSocketBuilder();
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return b.buildAsync(
        URI.create(http.base.replace("http:", "ws:") + "/v1/sandboxes/" + sandbox + "/stream"),
        listener);
  }

  @Test
  void aWebSocketStreamsAnExecutionAndRefusesStrangersAndNonsense() throws Exception {
    Collect ok = new Collect();
    WebSocket ws = socket(sandboxA, keyA, ok).get(30, TimeUnit.SECONDS);
    ws.sendText(
            "{\"type\": \"exec\", \"request\": {\"command\": \"echo ws-one; echo ws-two >&2\"}}",
            true)
        .get(30, TimeUnit.SECONDS);
    assertThat(ok.closed.get(60, TimeUnit.SECONDS)).isEqualTo(1000);
    String all = String.join("\n", ok.messages);
    assertThat(ok.messages.get(0)).contains("\"event\":\"started\"");
    assertThat(all).contains("ws-one").contains("ws-two").contains("\"event\":\"result\"");

    // No key: the upgrade itself is refused (401), nothing is opened.
    assertThatThrownBy(() -> socket(sandboxA, null, new Collect()).get(30, TimeUnit.SECONDS))
        .hasCauseInstanceOf(WebSocketHandshakeException.class);
    // Another tenant's sandbox: an error event (not found) and a close, no execution.
    Collect stranger = new Collect();
    socket(sandboxA, keyB, stranger).get(30, TimeUnit.SECONDS);
    assertThat(stranger.closed.get(30, TimeUnit.SECONDS)).isEqualTo(1008);
    assertThat(String.join("", stranger.messages)).contains("not_found");
    // Nonsense and an unknown op are refused with the fix.
    Collect nonsense = new Collect();
    socket(sandboxA, keyA, nonsense)
        .get(30, TimeUnit.SECONDS)
        .sendText("{\"type\": \"rm -rf\"}", true);
    assertThat(nonsense.closed.get(30, TimeUnit.SECONDS)).isEqualTo(1008);
    assertThat(String.join("", nonsense.messages))
        .contains("unknown")
        .contains("exec, code or cancel");
    // A message past max_json (4k here) is too big: the server closes.
    Collect big = new Collect();
    socket(sandboxA, keyA, big).get(30, TimeUnit.SECONDS).sendText("x".repeat(64 * 1024), true);
    assertThat(big.closed.get(30, TimeUnit.SECONDS)).isIn(1009, -1);
  }

  @Test
  void aStreamedCommandAskedToContinueRunsOnAfterItsClientLeaves() throws Exception {
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(http.base + sb("/exec")))
            .timeout(Duration.ofSeconds(30))
            .header("Authorization", "Bearer " + keyA)
            .header("Accept", "text/event-stream")
            .header("Content-Type", "application/json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"command\": \"sleep 2; echo on > left.txt\", \"onDisconnect\":"
                        + " \"continue\"}"))
            .build();
    HttpResponse<InputStream> r =
        HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    try (InputStream in = r.body()) {
      // Read up to the started event, then leave.
      String first = new String(in.readNBytes(16), StandardCharsets.UTF_8);
      assertThat(first).startsWith("event: started");
    }
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500))
        .until(() -> http.get(sb("/files/content?path=left.txt"), keyA).text().equals("on\n"));
    assertThat(
            http.json(
                    "POST",
                    sb("/exec"),
                    keyA,
                    "{\"command\": \"true\", \"onDisconnect\": \"later\"}")
                .status())
        .isEqualTo(400);
  }
}
