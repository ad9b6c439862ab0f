package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.docker.DockerEngineRequired;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code agentnest mcp --http}: loopback by default, bearer token refused/accepted. */
@ExtendWith(DockerEngineRequired.class)
class McpHttpIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TOKEN = "it-token-0123456789abcdef";
  private static final String INIT =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
          + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}";

  record Server(Process process, URI uri) implements AutoCloseable {
    @Override
    public void close() throws InterruptedException {
      process.destroy();
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    }
  }

  static Server start(Map<String, String> env, String... args) throws Exception {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                NodeTooling.java(), "-jar", NodeTooling.jar().toString(), "mcp", "--http", "0"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().putAll(env);
    Process p = pb.start();
    p.getOutputStream().close();
    BufferedReader err =
        new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
    Pattern serving = Pattern.compile("serving (http://\\S+)");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    StringBuilder seen = new StringBuilder();
    String line;
    while (System.nanoTime() < deadline && (line = err.readLine()) != null) {
      seen.append(line).append('\n');
      Matcher m = serving.matcher(line);
      if (m.find()) {
        Thread drain =
            new Thread(
                () -> {
                  try {
                    while (err.readLine() != null) {
                      // keep the pipe empty
                    }
                  } catch (java.io.IOException ignored) {
                    // process ended
                  }
                });
        drain.setDaemon(true);
        drain.start();
        return new Server(p, URI.create(m.group(1)));
      }
    }
    p.destroyForcibly();
    throw new AssertionError("agentnest mcp --http did not start:\n" + seen);
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

  @Test
  void loopbackByDefaultAndNoTokenNeededThere() throws Exception {
    try (Server s = start(Map.of())) {
      assertThat(s.uri().getHost()).isEqualTo("127.0.0.1");
      assertThat(s.uri().getPath()).isEqualTo("/mcp");
      HttpResponse<String> r = post(s.uri(), INIT);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(r.body()).contains("\"agentnest\"");
      HttpResponse<String> crossSite = post(s.uri(), INIT, "Origin", "https://evil.example");
      assertThat(crossSite.statusCode()).isEqualTo(403);
      assertThat(crossSite.body()).contains("cross-origin");
    }
  }

  @Test
  void nonLoopbackWithoutTokenIsRefused() throws Exception {
    NodeTooling.Run r =
        NodeTooling.run(
            List.of(
                NodeTooling.java(),
                "-jar",
                NodeTooling.jar().toString(),
                "mcp",
                "--http",
                "0",
                "--host",
                "0.0.0.0"),
            Path.of("."),
            60);
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

      NodeTooling.Run client =
          NodeTooling.run(List.of("node", "http-client.mjs", local.toString(), TOKEN), node, 180);
      assertThat(client.exit()).as(client.err()).isZero();
      JsonNode out = JSON.readTree(client.out().strip());
      assertThat(out.path("tools").toString()).contains("run_python");
      assertThat(McpStdioIT.text(out.path("py2"))).contains("[result]\n21");
      // The client deleted its session: the server destroyed the session's sandbox.
      String id = McpStdioIT.text(out.path("sandboxes")).split("\t", 2)[0];
      assertThat(id).isNotBlank();
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> io.agentnest.Sandbox.list().stream().noneMatch(i -> i.id().equals(id)));
    }
  }
}
