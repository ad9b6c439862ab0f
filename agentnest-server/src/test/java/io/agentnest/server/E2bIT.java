package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.tck.NodePackages;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The E2B face on the real engine: the official {@code e2b} and {@code @e2b/code-interpreter} npm
 * packages, unchanged, run a scenario against a server on loopback (lifecycle, code with state and
 * errors and rich results, streamed, failing, background and timed-out commands, files, timeouts,
 * list, two tenants); raw HTTP then plays the attacker (no or wrong tokens, unknown sandbox, other
 * ports, malformed and oversized Connect envelopes, a client that leaves mid-stream).
 */
@ExtendWith(DockerEngineRequired.class)
class E2bIT {
  /** Pinned like the MCP test clients: versions that run on Node 20. */
  static final List<String> SDKS = List.of("e2b@2.51.0", "@e2b/code-interpreter@2.8.0");

  @TempDir static Path dir;

  static TestServer running;
  static String keyA;
  static String keyB;
  static HttpClient client = HttpClient.newHttpClient();

  @BeforeAll
  static void start() {
    running = TestServer.loopback(dir);
    keyA = running.key(new Tenant("alpha", 4, 4L << 30, 4, 1000, null, null));
    keyB = running.key(new Tenant("beta", 2, 2L << 30, 2, 1000, null, null));
  }

  @AfterAll
  static void stop() {
    if (running != null) {
      running.close();
    }
  }

  static String base() {
    return "http://127.0.0.1:" + running.port();
  }

  /** Runs one of the test scripts with the SDKs against the server; returns its JSON line. */
  static JsonNode runScript(String script) throws Exception {
    Path node = NodePackages.install("it-node-e2b", SDKS);
    try (InputStream in = E2bIT.class.getResourceAsStream("/e2b/" + script)) {
      assertThat(in).isNotNull();
      Files.write(node.resolve(script), in.readAllBytes());
    }
    ProcessBuilder pb = new ProcessBuilder("node", script).directory(node.toFile());
    pb.environment().put("E2B_API_URL", base() + "/e2b");
    pb.environment().put("E2B_SANDBOX_URL", base() + "/e2b/sandbox");
    pb.environment().put("E2B_API_KEY", keyA);
    pb.environment().put("AGENTNEST_KEY_B", keyB);
    Path err = dir.resolve(script + ".err");
    pb.redirectError(err.toFile());
    Process p = pb.start();
    byte[] out;
    try (InputStream stdout = p.getInputStream()) {
      out = stdout.readNBytes(1 << 20);
    }
    assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("the scenario finishes").isTrue();
    String stderr = Files.readString(err);
    assertThat(p.exitValue()).as(stderr).isZero();
    String text = new String(out, StandardCharsets.UTF_8).strip();
    return Wire.JSON.readTree(text.substring(text.lastIndexOf('\n') + 1));
  }

  @Test
  void anAgentLoopOnTheSdkRecoversFromItsOwnErrorAndFinishes() throws Exception {
    JsonNode r = runScript("agent-loop.mjs");
    JsonNode obs = r.get("observations");
    assertThat(obs.get(0).asText()).as(r.toString()).startsWith("error: NameError");
    assertThat(obs.get(1).asText()).isEqualTo("5050");
    assertThat(obs.get(2).asText()).isEqualTo("written");
    assertThat(obs.get(3).asText()).isEqualTo("4");
    assertThat(r.get("final").asText()).isEqualTo("total is 5050, the file has 4 bytes");
  }

  @Test
  void theOfficialSdksRunUnchangedAgainstTheServer() throws Exception {
    JsonNode r = runScript("scenario.mjs");
    String text = r.toString();

    assertThat(r.at("/state/text").asText()).as(text).isEqualTo("2");
    assertThat(r.at("/error/name").asText()).isEqualTo("ZeroDivisionError");
    assertThat(r.at("/error/hasTraceback").asBoolean()).isTrue();
    assertThat(r.at("/streamedCode/stdout").asText()).isEqualTo("hello\n");
    assertThat(r.at("/streamedCode/stderr").asText()).isEqualTo("oops\n");
    assertThat(r.at("/streamedCode/seen").toString()).contains("[\"out\",\"hello\\n\"]");
    assertThat(r.at("/rich/html").asText()).isEqualTo("<b>bold</b>");
    assertThat(r.at("/rich/main").asBoolean()).isTrue();
    assertThat(r.at("/contexts/inCtx").asText()).isEqualTo("5");
    assertThat(r.at("/contexts/defaultError").asText()).isEqualTo("NameError");
    assertThat(r.at("/contexts/listed").asBoolean()).isTrue();
    assertThat(r.at("/contexts/removed").asBoolean()).isTrue();
    assertThat(r.at("/otherLanguage/message").asText()).contains("not served").contains("Python");

    assertThat(r.at("/command/stdout").asText()).isEqualTo("hi\n");
    assertThat(r.at("/command/stderr").asText()).isEqualTo("err\n");
    assertThat(r.at("/command/exitCode").asInt()).isZero();
    assertThat(r.at("/command/chunks").toString()).contains("hi");
    assertThat(r.at("/commandFails/isExitError").asBoolean()).as(text).isTrue();
    assertThat(r.at("/commandFails/exitCode").asInt()).isEqualTo(3);
    assertThat(r.at("/commandFails/stdout").asText()).isEqualTo("partial\n");
    assertThat(r.at("/background/listed").asBoolean()).as(text).isTrue();
    assertThat(r.at("/background/killed").asBoolean()).isTrue();
    assertThat(r.at("/background/gone").asBoolean()).isTrue();
    assertThat(r.at("/commandTimeout/thrown").asText()).as(text).isEqualTo("TimeoutError");

    JsonNode f = r.get("files");
    assertThat(f.get("read").asText()).as(text).isEqualTo("data");
    assertThat(f.get("viaShell").asText()).isEqualTo("data");
    assertThat(f.get("exists").asBoolean()).isTrue();
    assertThat(f.get("missing").asBoolean()).isFalse();
    assertThat(f.get("made").asBoolean()).isTrue();
    assertThat(f.get("madeAgain").asBoolean()).isFalse();
    assertThat(f.get("listed").toString()).contains("file:a.txt", "dir:dir");
    assertThat(f.get("renamed").asText()).isEqualTo("bee");
    assertThat(f.get("size").asLong()).isEqualTo(3);
    assertThat(f.get("path").asText()).isEqualTo("/home/user/dir/c.txt");
    assertThat(f.get("removed").asBoolean()).isTrue();
    assertThat(f.at("/outside/message").asText()).contains("outside the workspace");

    JsonNode pr = r.get("pauseResume");
    assertThat(pr.get("paused").asBoolean()).as(text).isTrue();
    assertThat(pr.get("pausedAgain").asBoolean()).isFalse();
    assertThat(pr.get("listedState").asText()).isEqualTo("paused");
    assertThat(pr.at("/whilePaused/message").asText()).contains("paused");
    assertThat(pr.get("kept").asText()).isEqualTo("42");
    assertThat(pr.get("file").asText()).isEqualTo("persisted");
    assertThat(pr.get("oldHandle").asText()).isEqualTo("41");
    assertThat(pr.get("sameId").asBoolean()).isTrue();
    JsonNode fk = r.get("fork");
    assertThat(fk.get("inCopy").asText()).as(text).isEqualTo("7");
    assertThat(fk.get("inOriginal").asText()).isEqualTo("7");
    assertThat(fk.get("killed").asBoolean()).isTrue();
    assertThat(fk.get("differentId").asBoolean()).isTrue();

    assertThat(r.at("/timeout/endInSeconds").asLong()).isBetween(200L, 250L);
    assertThat(r.at("/timeout/metadata/purpose").asText()).isEqualTo("e2b-it");
    assertThat(r.at("/list/found").asBoolean()).isTrue();
    assertThat(r.at("/list/filtered").asInt()).isZero();

    assertThat(r.at("/otherTenant/seesA").asBoolean()).as(text).isFalse();
    assertThat(r.at("/otherTenant/connectB/thrown").asText()).isNotEmpty();
    assertThat(r.at("/otherTenant/killB").asBoolean()).isFalse();
    assertThat(r.at("/otherTenant/stillRuns").asText()).isEqualTo("1");
    assertThat(r.at("/wrongKey/thrown").asText()).isEqualTo("AuthenticationError");
    assertThat(r.at("/unknownTemplate/message").asText()).contains("no-such-template");
    assertThat(r.at("/reconnect").asText()).isEqualTo("10");
    assertThat(r.at("/kill/killed").asBoolean()).isTrue();
    assertThat(r.at("/kill/after/thrown").asText()).isNotEmpty();
    assertThat(r.at("/kill/killedAgain").asBoolean()).isFalse();
  }

  // ---- the attacker's side: raw HTTP ---------------------------------------------------------

  record Made(String id, String envdToken, String trafficToken) {}

  static Made create(String key) throws Exception {
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(URI.create(base() + "/e2b/sandboxes"))
                .header("X-API-KEY", key)
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"templateID\":\"base\",\"timeout\":120}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    JsonNode n = Wire.JSON.readTree(r.body());
    return new Made(
        n.get("sandboxID").asText(),
        n.get("envdAccessToken").asText(),
        n.get("trafficAccessToken").asText());
  }

  static HttpResponse<byte[]> envd(
      String path, Map<String, String> headers, String contentType, byte[] body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(base() + "/e2b/sandbox" + path))
            .timeout(Duration.ofSeconds(60))
            .header("Content-Type", contentType)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    headers.forEach(b::header);
    return client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  static Map<String, String> as(Made m, String token) {
    return Map.of("E2b-Sandbox-Id", m.id(), "E2b-Sandbox-Port", "49983", "X-Access-Token", token);
  }

  static byte[] envelope(int flags, byte[] msg, int announced) {
    ByteBuffer b = ByteBuffer.allocate(5 + msg.length);
    b.put((byte) flags).putInt(announced).put(msg);
    return b.array();
  }

  static JsonNode endOfStream(byte[] body) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(body);
    JsonNode last = null;
    int frames = 0;
    while (b.remaining() >= 5 && frames++ < 10_000) {
      int flags = b.get() & 0xff;
      int len = b.getInt();
      byte[] msg = new byte[len];
      b.get(msg);
      if ((flags & 0x02) != 0) {
        last = Wire.JSON.readTree(msg);
      }
    }
    assertThat(last).as("an end-of-stream envelope").isNotNull();
    return last;
  }

  @Test
  void aCommandStartedThroughTheE2bFaceWaitsForAnApprovalInTheServersQueue() throws Exception {
    HttpResponse<String> made =
        client.send(
            HttpRequest.newBuilder(URI.create(base() + "/e2b/sandboxes"))
                .header("X-API-KEY", keyA)
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"templateID\":\"base\",\"metadata\":{\"agentnest.approvals\":\"recommended\"}}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
    JsonNode n = Wire.JSON.readTree(made.body());
    Made a = new Made(n.get("sandboxID").asText(), n.get("envdAccessToken").asText(), "");
    envd(
        "/files?path=doomed.txt", as(a, a.envdToken()), "application/octet-stream", new byte[] {1});
    byte[] msg =
        "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"rm doomed.txt && echo gone\"]}}"
            .getBytes(StandardCharsets.UTF_8);
    var call =
        client.sendAsync(
            HttpRequest.newBuilder(URI.create(base() + "/e2b/sandbox/process.Process/Start"))
                .timeout(Duration.ofSeconds(120))
                .header("Content-Type", "application/connect+json")
                .header("E2b-Sandbox-Id", a.id())
                .header("E2b-Sandbox-Port", "49983")
                .header("X-Access-Token", a.envdToken())
                .POST(HttpRequest.BodyPublishers.ofByteArray(envelope(0, msg, msg.length)))
                .build(),
            HttpResponse.BodyHandlers.ofByteArray());
    Http http = running.http();
    JsonNode question = null;
    for (int i = 0; i < 300 && question == null; i++) {
      JsonNode list = http.get("/v1/approvals", keyA).json().get("approvals");
      if (list.size() > 0) {
        question = list.get(0);
      } else {
        Thread.sleep(100);
      }
    }
    assertThat(question).as("the rm waits for a person").isNotNull();
    assertThat(question.toString()).contains("doomed.txt");
    assertThat(http.get("/v1/approvals", keyB).json().get("approvals").size()).isZero();
    Http.Reply decided =
        http.json(
            "POST", "/v1/approvals/" + question.get("id").asText(), keyA, "{\"approve\": true}");
    assertThat(decided.status()).as(decided.text()).isEqualTo(204);
    String body = new String(call.get(120, TimeUnit.SECONDS).body(), StandardCharsets.UTF_8);
    assertThat(body)
        .contains(Base64.getEncoder().encodeToString("gone\n".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void codeInterpreterCallsStreamIntoTheConsolesExecutionsWhileTheyRun() throws Exception {
    Made a = create(keyA);
    HttpResponse<String> signIn =
        client.send(
            HttpRequest.newBuilder(URI.create(base() + "/console/session"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + keyA + "\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(signIn.statusCode()).as(signIn.body()).isEqualTo(201);
    String setCookie = signIn.headers().firstValue("Set-Cookie").orElseThrow();
    String cookie = setCookie.substring(0, setCookie.indexOf(';'));
    String code =
        "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)";
    CompletableFuture<HttpResponse<byte[]>> call =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return envd(
                    "/execute",
                    Map.of(
                        "E2b-Sandbox-Id",
                        a.id(),
                        "E2b-Sandbox-Port",
                        "49999",
                        "X-Access-Token",
                        a.envdToken()),
                    "application/json",
                    Wire.JSON.writeValueAsBytes(Map.of("code", code)));
              } catch (Exception e) {
                throw new CompletionException(e);
              }
            });
    HttpResponse<Stream<String>> events =
        client.send(
            HttpRequest.newBuilder(URI.create(base() + "/console/executions?sandbox=" + a.id()))
                .header("Cookie", cookie)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofLines());
    assertThat(events.statusCode()).isEqualTo(200);
    boolean seenRunning = false;
    JsonNode finished = null;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    try (Stream<String> lines = events.body()) {
      Iterator<String> it = lines.limit(10_000).iterator();
      while (finished == null && System.nanoTime() < deadline && it.hasNext()) {
        String line = it.next();
        if (!line.startsWith("data: ")) {
          continue;
        }
        JsonNode run = Wire.JSON.readTree(line.substring(6));
        if (!"e2b-code".equals(run.path("kind").asText())) {
          continue;
        }
        assertThat(run.get("text").asText()).isEqualTo(code);
        if (run.get("finishedAt").isNull()) {
          // Output shown while the call still runs: tick 0 before the last tick.
          seenRunning |= run.get("output").asText().contains("tick 0") && !call.isDone();
        } else {
          finished = run;
        }
      }
    }
    assertThat(seenRunning).as("output seen before the call ended").isTrue();
    assertThat(finished).isNotNull();
    assertThat(finished.get("output").asText()).isEqualTo("tick 0\ntick 1\ntick 2\n");
    assertThat(finished.get("outcome").asText()).isEqualTo("exit 0");
    assertThat(call.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    // Gives the tenant's sandbox quota back for the other tests.
    HttpResponse<String> killed =
        client.send(
            HttpRequest.newBuilder(URI.create(base() + "/e2b/sandboxes/" + a.id()))
                .header("X-API-KEY", keyA)
                .DELETE()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(killed.statusCode()).as(killed.body()).isEqualTo(204);
  }

  @Test
  void sandboxServicesNeedTheSandboxsOwnAccessToken() throws Exception {
    Made a = create(keyA);
    Made b = create(keyB);
    byte[] list = "{}".getBytes(StandardCharsets.UTF_8);
    HttpResponse<byte[]> ok =
        envd("/process.Process/List", as(a, a.envdToken()), "application/json", list);
    assertThat(ok.statusCode()).as(new String(ok.body(), StandardCharsets.UTF_8)).isEqualTo(200);

    // Tenant B's token for its own sandbox opens nothing of A's; no token, a guessed one neither.
    assertThat(
            envd("/process.Process/List", as(a, b.envdToken()), "application/json", list)
                .statusCode())
        .isEqualTo(401);
    assertThat(envd("/process.Process/List", as(a, ""), "application/json", list).statusCode())
        .isEqualTo(401);
    HttpResponse<byte[]> unknown =
        envd(
            "/process.Process/List",
            Map.of(
                "E2b-Sandbox-Id",
                "nope",
                "E2b-Sandbox-Port",
                "49983",
                "X-Access-Token",
                a.envdToken()),
            "application/json",
            list);
    // An unknown id and a known id with a wrong token get the same answer: before the token is
    // checked nobody learns which ids exist, run or are paused (issue 42, LOW 18).
    HttpResponse<byte[]> wrongToken =
        envd("/process.Process/List", as(a, b.envdToken()), "application/json", list);
    assertThat(unknown.statusCode()).isEqualTo(401).isEqualTo(wrongToken.statusCode());
    assertThat(new String(unknown.body(), StandardCharsets.UTF_8).replace("nope", "ID"))
        .isEqualTo(new String(wrongToken.body(), StandardCharsets.UTF_8).replace(a.id(), "ID"))
        .contains("access token");
    // The traffic token is for the code interpreter only, never envd.
    assertThat(
            envd("/process.Process/List", as(a, a.trafficToken()), "application/json", list)
                .statusCode())
        .isEqualTo(401);
    HttpResponse<byte[]> port =
        envd(
            "/execute",
            Map.of(
                "E2b-Sandbox-Id",
                a.id(),
                "E2b-Sandbox-Port",
                "8080",
                "X-Access-Token",
                a.envdToken()),
            "application/json",
            "{\"code\":\"1\"}".getBytes(StandardCharsets.UTF_8));
    assertThat(port.statusCode()).isEqualTo(502);
    assertThat(new String(port.body(), StandardCharsets.UTF_8)).contains("not served");
    HttpResponse<String> wrongKey =
        client.send(
            HttpRequest.newBuilder(URI.create(base() + "/e2b/v2/sandboxes"))
                .header("X-API-KEY", "ank_0000000000000000_" + "A".repeat(43))
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(wrongKey.statusCode()).isEqualTo(401);
    assertThat(Wire.JSON.readTree(wrongKey.body()).get("code").asInt()).isEqualTo(401);
  }

  @Test
  void malformedAndOversizedConnectEnvelopesAreRefusedWithTheReason() throws Exception {
    Made a = create(keyA);
    byte[] msg =
        "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"]}}"
            .getBytes(StandardCharsets.UTF_8);
    String stream = "application/connect+json";
    JsonNode truncated =
        endOfStream(
            envd(
                    "/process.Process/Start",
                    as(a, a.envdToken()),
                    stream,
                    envelope(0, msg, msg.length + 50))
                .body());
    assertThat(truncated.at("/error/code").asText()).isEqualTo("invalid_argument");
    assertThat(truncated.at("/error/message").asText()).contains("ended inside");

    JsonNode oversized =
        endOfStream(
            envd("/process.Process/Start", as(a, a.envdToken()), stream, envelope(0, msg, 1 << 30))
                .body());
    assertThat(oversized.at("/error/code").asText()).isEqualTo("resource_exhausted");
    assertThat(oversized.at("/error/message").asText()).contains("bound");

    JsonNode compressed =
        endOfStream(
            envd(
                    "/process.Process/Start",
                    as(a, a.envdToken()),
                    stream,
                    envelope(1, msg, msg.length))
                .body());
    assertThat(compressed.at("/error/message").asText()).contains("compressed");

    byte[] notJson = "{nope".getBytes(StandardCharsets.UTF_8);
    JsonNode bad =
        endOfStream(
            envd(
                    "/process.Process/Start",
                    as(a, a.envdToken()),
                    stream,
                    envelope(0, notJson, notJson.length))
                .body());
    assertThat(bad.at("/error/message").asText()).contains("not valid JSON");

    HttpResponse<byte[]> binary =
        envd(
            "/filesystem.Filesystem/Stat",
            as(a, a.envdToken()),
            "application/proto",
            new byte[] {1, 2});
    assertThat(binary.statusCode()).isEqualTo(400);
    assertThat(new String(binary.body(), StandardCharsets.UTF_8)).contains("application/json");

    HttpResponse<byte[]> escape =
        envd(
            "/filesystem.Filesystem/Stat",
            as(a, a.envdToken()),
            "application/json",
            "{\"path\":\"/home/user/../../etc/passwd\"}".getBytes(StandardCharsets.UTF_8));
    assertThat(escape.statusCode()).isEqualTo(400);
    assertThat(new String(escape.body(), StandardCharsets.UTF_8)).contains("..");

    // The server still serves the sandbox after all that.
    JsonNode fine =
        endOfStream(
            envd(
                    "/process.Process/Start",
                    as(a, a.envdToken()),
                    stream,
                    envelope(0, msg, msg.length))
                .body());
    assertThat(fine.has("error")).as(fine.toString()).isFalse();
  }

  @Test
  void aClientThatLeavesMidStreamLeavesTheCommandRunningAndKillable() throws Exception {
    Made a = create(keyA);
    byte[] msg =
        "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo started; sleep 30\"]}}"
            .getBytes(StandardCharsets.UTF_8);
    byte[] body = envelope(0, msg, msg.length);
    String head =
        "POST /e2b/sandbox/process.Process/Start HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Content-Type: application/connect+json\r\nE2b-Sandbox-Id: "
            + a.id()
            + "\r\nE2b-Sandbox-Port: 49983\r\nX-Access-Token: "
            + a.envdToken()
            + "\r\nContent-Length: "
            + body.length
            + "\r\n\r\n";
    try (Socket s = new Socket("127.0.0.1", running.port())) {
      s.setSoTimeout(30_000);
      OutputStream out = s.getOutputStream();
      out.write(head.getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      InputStream in = s.getInputStream();
      StringBuilder seen = new StringBuilder();
      byte[] buf = new byte[4096];
      for (int i = 0; i < 100 && !seen.toString().contains("\"data\""); i++) {
        int n = in.read(buf);
        if (n < 0) {
          break;
        }
        seen.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
      }
      assertThat(seen.toString()).contains("\"start\"").contains("\"data\"");
    }
    // Gone mid-stream: the command is still listed, and can be killed by its pid.
    HttpResponse<byte[]> listed =
        envd(
            "/process.Process/List",
            as(a, a.envdToken()),
            "application/json",
            "{}".getBytes(StandardCharsets.UTF_8));
    JsonNode procs = Wire.JSON.readTree(listed.body()).get("processes");
    assertThat(procs).hasSize(1);
    int pid = procs.get(0).get("pid").asInt();
    HttpResponse<byte[]> kill =
        envd(
            "/process.Process/SendSignal",
            as(a, a.envdToken()),
            "application/json",
            ("{\"process\":{\"pid\":" + pid + "},\"signal\":\"SIGNAL_SIGKILL\"}")
                .getBytes(StandardCharsets.UTF_8));
    assertThat(kill.statusCode())
        .as(new String(kill.body(), StandardCharsets.UTF_8))
        .isEqualTo(200);
    JsonNode after = null;
    for (int i = 0; i < 50; i++) {
      after =
          Wire.JSON.readTree(
              envd(
                      "/process.Process/List",
                      as(a, a.envdToken()),
                      "application/json",
                      "{}".getBytes(StandardCharsets.UTF_8))
                  .body());
      if (after.get("processes").isEmpty()) {
        break;
      }
      Thread.sleep(100);
    }
    assertThat(after.get("processes")).isEmpty();
  }
}
