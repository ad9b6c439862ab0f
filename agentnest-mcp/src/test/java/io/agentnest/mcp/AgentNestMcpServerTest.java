package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The protocol surface without a Docker engine: a raw JSON-RPC client over piped stdio. */
class AgentNestMcpServerTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void toolSchemasAreDescribedForAModel() {
    AtomicInteger created = new AtomicInteger();
    try (AgentNestMcpServer server =
        AgentNestMcpServer.builder()
            .sandboxFactory(
                c -> {
                  created.incrementAndGet();
                  throw new AssertionError("listing tools must not create a sandbox");
                })
            .build()) {
      List<McpSchema.Tool> tools = server.tools();
      List<String> names = new ArrayList<>();
      tools.forEach(t -> names.add(t.name()));
      assertThat(names)
          .containsExactly(
              "run_python",
              "run_shell",
              "write_file",
              "read_file",
              "list_files",
              "export_artifact",
              "create_sandbox",
              "list_sandboxes",
              "destroy_sandbox",
              "fork_sandbox",
              "browser_open",
              "browser_screenshot",
              "browser_text",
              "git_clone",
              "git_diff",
              "git_commit");
      for (McpSchema.Tool t : tools) {
        assertThat(t.description()).as(t.name()).hasSizeGreaterThan(40);
        assertThat(t.inputSchema()).containsEntry("type", "object");
        assertThat(t.inputSchema()).containsEntry("additionalProperties", false);
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> props =
            (Map<String, Map<String, Object>>) t.inputSchema().get("properties");
        props.forEach(
            (name, p) -> {
              assertThat(p).as(t.name() + "." + name).containsKeys("type", "description");
            });
      }
      assertThat(created).hasValue(0);
    }
  }

  @Test
  void stdioSpeaksOnlyProtocolAndAnswersWithoutASandbox() throws Exception {
    try (PipedStdio stdio = PipedStdio.serveWithoutSandboxes("no sandbox needed")) {
      stdio.send(PipedStdio.INIT);
      JsonNode init = stdio.receive();
      assertThat(init.at("/result/serverInfo/name").asText()).isEqualTo("agentnest");
      assertThat(init.at("/result/instructions").asText()).contains("run_python");
      stdio.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
      stdio.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
      JsonNode list = stdio.receive();
      assertThat(list.at("/result/tools").size()).isEqualTo(16);
      stdio.send(
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
              + "\"list_sandboxes\",\"arguments\":{}}}");
      JsonNode empty = stdio.receive();
      assertThat(empty.at("/result/content/0/text").asText()).contains("no sandboxes yet");
      stdio.send(
          "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
              + "\"destroy_sandbox\",\"arguments\":{\"sandbox_id\":\"nope\"}}}");
      JsonNode missing = stdio.receive();
      assertThat(missing.at("/result/isError").asBoolean()).isTrue();
      assertThat(missing.at("/result/content/0/text").asText())
          .contains("no sandbox 'nope'", "list_sandboxes");
      assertThat(stdio.endsWhenStdinCloses()).as("server ends when stdin closes").isTrue();
    }
  }

  @Test
  void httpOffLoopbackNeedsAToken() {
    try (AgentNestMcpServer server = AgentNestMcpServer.builder().build()) {
      assertThatThrownBy(
              () -> server.serveHttp(new AgentNestMcpServer.HttpOptions("0.0.0.0", 0, null)))
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("needs a bearer token");
    }
  }

  @Test
  void builderRejectsNonsense() {
    assertThatThrownBy(() -> AgentNestMcpServer.builder().maxSandboxesPerSession(0))
        .isInstanceOf(ConfigException.class);
    assertThatThrownBy(() -> new AgentNestMcpServer.HttpOptions("127.0.0.1", 70000, null))
        .isInstanceOf(ConfigException.class);
    assertThat(AgentNestMcpServer.isLoopback("127.0.0.1")).isTrue();
    assertThat(AgentNestMcpServer.isLoopback("::1")).isTrue();
    assertThat(AgentNestMcpServer.builder().config(SandboxConfig.defaults()).build())
        .isNotNull()
        .satisfies(AgentNestMcpServer::close);
  }

  @Test
  void argumentHelpersExplainBadInput() {
    assertThatThrownBy(() -> McpArguments.string(Map.of(), "code"))
        .hasMessage("'code' is required");
    assertThatThrownBy(() -> McpArguments.string(Map.of("code", 5), "code"))
        .hasMessage("'code' must be a string");
    assertThat(McpArguments.bool(Map.of("recursive", "true"), "recursive")).isTrue();
    assertThatThrownBy(() -> McpArguments.bool(Map.of("recursive", 3), "recursive"))
        .hasMessageContaining("true or false");
    assertThat(McpArguments.timeout(Map.of("timeout_seconds", 1.5)).toMillis()).isEqualTo(1500);
    assertThatThrownBy(() -> McpArguments.timeout(Map.of("timeout_seconds", -1)))
        .hasMessageContaining("between 0 and 86400");
    assertThatThrownBy(() -> McpArguments.timeout(Map.of("timeout_seconds", "soon")))
        .hasMessageContaining("number of seconds");
  }
}
