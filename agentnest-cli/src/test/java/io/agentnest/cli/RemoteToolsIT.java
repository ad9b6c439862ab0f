package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.langchain4j.AgentNestTools;
import io.agentnest.springai.AgentNestToolCallbacks;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.ai.tool.ToolCallback;

/**
 * The agent-facing tools, unchanged, against an {@code agentnest serve} process: the MCP server
 * (driven by the MCP Inspector's CLI, with only AGENTNEST_URL and AGENTNEST_API_KEY set), the
 * LangChain4j tools and the Spring AI tool callbacks on a remote sandbox. The server's own audit
 * shows that the code ran there.
 */
@ExtendWith(DockerEngineRequired.class)
class RemoteToolsIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static ServeProcess server;

  @BeforeAll
  static void start() {
    server = ServeProcess.start("tools");
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
  }

  private static JsonNode serverGet(String path) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(server.url + path))
                    .timeout(Duration.ofSeconds(30))
                    .header("Authorization", "Bearer " + server.key)
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  private static List<String> auditTexts(String text) throws Exception {
    JsonNode events =
        serverGet("/v1/audit?limit=200&text=" + URLEncoder.encode(text, StandardCharsets.UTF_8))
            .path("events");
    List<String> out = new ArrayList<>();
    events.forEach(e -> out.add(e.toString()));
    return out;
  }

  @Test
  void theMcpServerRunsItsToolsOnTheServerNamedByAgentnestUrl() throws Exception {
    Path node = NodeTooling.dir();
    List<String> cmd =
        new ArrayList<>(
            Arrays.asList(
                "npx",
                "@modelcontextprotocol/inspector",
                "--cli",
                "-e",
                "AGENTNEST_URL=" + server.url,
                "-e",
                "AGENTNEST_API_KEY=" + server.key,
                "-e",
                "AGENTNEST_HOME=" + server.home.resolve("mcp-client")));
    cmd.addAll(Processes.cli("mcp"));
    cmd.addAll(
        List.of(
            "--method",
            "tools/call",
            "--tool-name",
            "run_python",
            "--tool-arg",
            "code=print('mcp-remote', 6 * 7)"));
    Processes.Run called = Processes.run(cmd, node, 240);
    assertThat(called.exit()).as(called.err()).isZero();
    JsonNode result = JSON.readTree(called.out());
    assertThat(McpStdioIT.isError(result)).as(called.out()).isFalse();
    assertThat(McpStdioIT.text(result)).contains("mcp-remote 42");
    assertThat(auditTexts("mcp-remote")).isNotEmpty();
  }

  @Test
  void langChain4jAndSpringAiToolsRunOnARemoteSandbox() throws Exception {
    SandboxConfig config =
        SandboxConfig.builder().remote(URI.create(server.url), server.key).build();
    try (Sandbox sb = Sandbox.create(config)) {
      assertThat(serverGet("/v1/sandboxes").path("sandboxes").findValuesAsText("id"))
          .contains(sb.id());

      AgentNestTools lc4j = new AgentNestTools(sb);
      assertThat(lc4j.runPython("print('lc4j-remote', 6 * 7)")).contains("lc4j-remote 42");

      ToolCallback python =
          Arrays.stream(AgentNestToolCallbacks.of(sb))
              .filter(t -> t.getToolDefinition().name().equals("run_python"))
              .findFirst()
              .orElseThrow();
      assertThat(python.call("{\"code\": \"print('spring-remote', 7 * 6)\"}"))
          .contains("spring-remote 42");
    }
    assertThat(auditTexts("lc4j-remote")).isNotEmpty();
    assertThat(auditTexts("spring-remote")).isNotEmpty();
  }
}
