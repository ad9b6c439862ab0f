package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.docker.DockerBackend;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.spi.Labels;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agentnest mcp --http}: loopback by default with a generated bearer token, Host and Origin
 * checked, an explicit token refused/accepted, and the TypeScript SDK client over streamable HTTP.
 */
@ExtendWith(DockerEngineRequired.class)
class McpHttpIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TOKEN = "it-token-0123456789abcdef";
  private static final String INIT =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
          + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}";

  /** A temporary AGENTNEST_HOME for every server of this class: never the real ~/.agentnest. */
  @TempDir static Path home;

  record Server(Process process, URI uri, List<String> stderr) implements AutoCloseable {
    /** The stderr lines so far (the drain thread keeps adding). */
    String err() {
      synchronized (stderr) {
        return String.join("\n", stderr);
      }
    }

    @Override
    public void close() throws InterruptedException {
      process.destroy();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(20, TimeUnit.SECONDS);
      }
      // On a busy host the server's own cleanup can outlast the wait: remove what it left.
      DockerBackend docker = new DockerBackend();
      String pid = Long.toString(process.pid());
      for (SandboxInfo i : docker.list()) {
        if (pid.equals(i.labels().get(Labels.OWNER_PID))) {
          docker.destroy(i.id());
        }
      }
    }
  }

  static Server start(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = Processes.cli("mcp", "--http", "0");
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("AGENTNEST_HOME", home.toString());
    pb.environment().putAll(env);
    Process p = pb.start();
    p.getOutputStream().close();
    BufferedReader err =
        new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
    Pattern serving = Pattern.compile("serving (http://\\S+)");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    List<String> seen = new ArrayList<>();
    String line;
    while (System.nanoTime() < deadline && (line = err.readLine()) != null) {
      seen.add(line);
      Matcher m = serving.matcher(line);
      if (m.find()) {
        Thread drain =
            new Thread(
                () -> {
                  try {
                    String l;
                    while ((l = err.readLine()) != null) {
                      synchronized (seen) {
                        if (seen.size() < 10_000) {
                          seen.add(l);
                        }
                      }
                    }
                  } catch (IOException ignored) {
                    // process ended
                  }
                });
        drain.setDaemon(true);
        drain.start();
        return new Server(p, URI.create(m.group(1)), seen);
      }
    }
    p.destroyForcibly();
    throw new AssertionError("agentnest mcp --http did not start:\n" + String.join("\n", seen));
  }

  /** Runs {@code agentnest mcp --http 0 ARGS} to its exit: for a configuration refused at start. */
  static Processes.Run runToExit(Map<String, String> env, String... args) throws Exception {
    Map<String, String> all = new HashMap<>(env);
    all.put("AGENTNEST_HOME", home.toString());
    List<String> cmd = Processes.cli("mcp", "--http", "0");
    cmd.addAll(List.of(args));
    return Processes.run(cmd, Path.of("."), 60, all);
  }

  static HttpResponse<String> post(URI uri, String body, String... headers) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(uri)
            .timeout(Duration.ofSeconds(30))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** One raw request with exactly these headers (java.net.http will not send a forged Host). */
  static int rawStatus(URI uri, String... headers) throws Exception {
    try (Socket s = new Socket(uri.getHost(), uri.getPort())) {
      s.setSoTimeout(30_000);
      byte[] body = INIT.getBytes(StandardCharsets.UTF_8);
      StringBuilder req = new StringBuilder("POST /mcp HTTP/1.1\r\n");
      for (String h : headers) {
        req.append(h).append("\r\n");
      }
      req.append(
              "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
          .append("Content-Length: ")
          .append(body.length)
          .append("\r\nConnection: close\r\n\r\n");
      s.getOutputStream().write(req.toString().getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().write(body);
      s.getOutputStream().flush();
      String status =
          new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1))
              .readLine();
      return Integer.parseInt(status.split(" ")[1]);
    }
  }

  @Test
  void loopbackByDefaultWithAGeneratedTokenThatTheTypeScriptClientUses() throws Exception {
    Path node = NodeTooling.dir();
    Path tokenFile = home.resolve("mcp").resolve("http-token");
    Files.deleteIfExists(tokenFile);
    String token;
    try (Server s = start(Map.of())) {
      assertThat(s.uri().getHost()).isEqualTo("127.0.0.1");
      assertThat(s.uri().getPath()).isEqualTo("/mcp");
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> s.err().contains("claude mcp add"));
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(tokenFile)))
          .isEqualTo("rw-------");
      token = Files.readString(tokenFile).strip();
      assertThat(s.err())
          .contains("shown only now", tokenFile.toString())
          .contains(
              "claude mcp add --transport http agentnest "
                  + s.uri()
                  + " --header \"Authorization: Bearer "
                  + token
                  + "\"");

      HttpResponse<String> none = post(s.uri(), INIT);
      assertThat(none.statusCode()).isEqualTo(401);
      assertThat(none.body()).contains("missing bearer token", "http-token");
      HttpResponse<String> right = post(s.uri(), INIT, "Authorization", "Bearer " + token);
      assertThat(right.statusCode()).as(right.body()).isEqualTo(200);
      assertThat(right.body()).contains("\"agentnest\"");
      HttpResponse<String> crossSite =
          post(s.uri(), INIT, "Authorization", "Bearer " + token, "Origin", "https://evil.example");
      assertThat(crossSite.statusCode()).isEqualTo(403);
      assertThat(crossSite.body()).contains("cross-origin");
      assertThat(
              rawStatus(
                  s.uri(), "Host: 127.0.0.1.attacker.example", "Authorization: Bearer " + token))
          .isEqualTo(403);

      Processes.Run client =
          Processes.run(List.of("node", "http-client.mjs", s.uri().toString(), token), node, 180);
      assertThat(client.exit()).as(client.err()).isZero();
      JsonNode out = JSON.readTree(client.out().strip());
      assertThat(McpStdioIT.text(out.path("py2"))).contains("[result]\n21");
      Processes.Run stranger =
          Processes.run(
              List.of("node", "http-client.mjs", s.uri().toString(), "not-the-token"), node, 120);
      assertThat(stranger.exit()).as("a client without the token is refused").isNotZero();
    }
    // A later start keeps the token (the client configuration stays valid) and does not print it.
    try (Server again = start(Map.of())) {
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> again.err().contains("claude mcp add"));
      assertThat(again.err())
          .doesNotContain(token)
          .contains("\"Authorization: Bearer $(cat " + tokenFile + ")\"");
      assertThat(post(again.uri(), INIT, "Authorization", "Bearer " + token).statusCode())
          .isEqualTo(200);
    }
  }

  @Test
  void noTokenOptsOutButHostAndOriginAreStillChecked() throws Exception {
    try (Server s = start(Map.of(), "--no-token")) {
      Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> s.err().contains("--no-token"));
      HttpResponse<String> r = post(s.uri(), INIT);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(post(s.uri(), INIT, "Origin", "https://evil.example").statusCode()).isEqualTo(403);
      assertThat(rawStatus(s.uri(), "Host: 127.0.0.1.attacker.example")).isEqualTo(403);
      assertThat(rawStatus(s.uri(), "Host: localhost:" + s.uri().getPort())).isEqualTo(200);
    }
    Processes.Run both = runToExit(Map.of("AGENTNEST_MCP_TOKEN", TOKEN), "--no-token");
    assertThat(both.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(both.err()).contains("--no-token contradicts AGENTNEST_MCP_TOKEN");
  }

  @Test
  void nonLoopbackWithoutTokenIsRefused() throws Exception {
    Processes.Run r = runToExit(Map.of(), "--host", "0.0.0.0");
    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err()).contains("needs a bearer token", "AGENTNEST_MCP_TOKEN");
  }

  @Test
  void bearerTokenIsRefusedWhenWrongAndAcceptedByTheTypeScriptClient() throws Exception {
    Path node = NodeTooling.dir();
    try (Server s = start(Map.of("AGENTNEST_MCP_TOKEN", TOKEN), "--host", "0.0.0.0")) {
      URI local = URI.create("http://127.0.0.1:" + s.uri().getPort() + "/mcp");
      HttpResponse<String> none = post(local, INIT);
      assertThat(none.statusCode()).isEqualTo(401);
      assertThat(none.body()).contains("missing bearer token");
      HttpResponse<String> wrong = post(local, INIT, "Authorization", "Bearer nope");
      assertThat(wrong.statusCode()).isEqualTo(401);
      assertThat(wrong.body()).contains("wrong bearer token");
      HttpResponse<String> right = post(local, INIT, "Authorization", "Bearer " + TOKEN);
      assertThat(right.statusCode()).isEqualTo(200);

      Processes.Run client =
          Processes.run(List.of("node", "http-client.mjs", local.toString(), TOKEN), node, 180);
      assertThat(client.exit()).as(client.err()).isZero();
      JsonNode out = JSON.readTree(client.out().strip());
      assertThat(out.path("tools").toString()).contains("run_python");
      assertThat(McpStdioIT.text(out.path("py2"))).contains("[result]\n21");
      // The client deleted its session: the server destroyed the session's sandbox.
      String id = McpStdioIT.text(out.path("sandboxes")).split("\t", 2)[0];
      assertThat(id).isNotBlank();
      Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> Sandbox.list().stream().noneMatch(i -> i.id().equals(id)));
    }
  }
}
