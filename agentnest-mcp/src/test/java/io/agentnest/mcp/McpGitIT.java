package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.config.Preset;
import io.agentnest.config.Presets;
import io.agentnest.docker.BaseImageBuilder;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.docker.GitHttpServer;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.StaticResolver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * git_clone, git_diff and git_commit over MCP's stdio transport against a sandbox of the data
 * preset (it has git), cloning from a git server on the host's loopback through the egress proxy
 * (the test-only loopback allowance of the docker module's ITs).
 */
@ExtendWith(DockerEngineRequired.class)
class McpGitIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir static Path tmp;
  static GitHttpServer git;
  static int nextId = 10;

  @BeforeAll
  static void start() throws Exception {
    GitHttpServer.requireHostGit();
    Preset p = Presets.get("data");
    if (!BaseImageBuilder.exists(p.image())) {
      BaseImageBuilder.buildPreset(p, List.of(), "bookworm", n -> {});
    }
    Path repos = Files.createDirectories(tmp.resolve("repos"));
    GitHttpServer.seed(repos, "app.git", tmp);
    git = new GitHttpServer(repos, null);
    EgressResolvers.replaceForTests(
        StaticResolver.of("git.test", "127.0.0.1").with("other.test", "127.0.0.1"));
  }

  @AfterAll
  static void stop() {
    EgressResolvers.replaceForTests(null);
    if (git != null) {
      git.close();
    }
  }

  static JsonNode call(PipedStdio stdio, String tool, Map<String, Object> args) throws Exception {
    int id = nextId++;
    ObjectNode req = JSON.createObjectNode().put("jsonrpc", "2.0").put("id", id);
    req.put("method", "tools/call");
    req.putObject("params").put("name", tool).set("arguments", JSON.valueToTree(args));
    stdio.send(JSON.writeValueAsString(req));
    for (int i = 0; i < 1000; i++) {
      JsonNode m = stdio.receive();
      if (m.path("id").asInt(-1) == id) {
        return m.path("result");
      }
    }
    throw new AssertionError("no answer to " + tool);
  }

  static String text(JsonNode result) {
    StringBuilder b = new StringBuilder();
    for (JsonNode c : result.path("content")) {
      b.append(c.path("text").asText(""));
    }
    return b.toString();
  }

  @Test
  void cloneChangeDiffAndCommitThroughTheTools() throws Exception {
    SandboxConfig config =
        SandboxConfig.preset("data")
            .network(
                NetworkPolicy.builder()
                    .allow("git.test:" + git.port())
                    .allowAddress("127.0.0.1")
                    .build())
            .build();
    try (PipedStdio stdio = PipedStdio.serve(AgentNestMcpServer.builder().config(config).build())) {
      stdio.send(PipedStdio.INIT);
      stdio.receive();
      stdio.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
      String url = "http://git.test:" + git.port() + "/app.git";

      JsonNode cloned = call(stdio, "git_clone", Map.of("url", url, "dir", "app"));
      assertThat(cloned.path("isError").asBoolean()).as(cloned.toString()).isFalse();
      assertThat(text(cloned))
          .contains("cloned into app (branch main, last commit")
          .contains("init");

      JsonNode clean = call(stdio, "git_diff", Map.of("dir", "app"));
      assertThat(text(clean)).isEqualTo("(no changes)");

      JsonNode wrote =
          call(
              stdio,
              "write_file",
              Map.of("path", "app/src/app.txt", "content", "line one\nline 2 via MCP\n"));
      assertThat(wrote.path("isError").asBoolean()).as(wrote.toString()).isFalse();
      JsonNode diff = call(stdio, "git_diff", Map.of("dir", "app"));
      assertThat(text(diff)).contains("-line two").contains("+line 2 via MCP");

      JsonNode committed =
          call(
              stdio,
              "git_commit",
              Map.of("dir", "app", "message", "fix: line two", "branch", "mcp/fix"));
      assertThat(committed.path("isError").asBoolean()).as(committed.toString()).isFalse();
      assertThat(text(committed)).matches("committed [0-9a-f]{40} on mcp/fix");
      assertThat(text(call(stdio, "git_diff", Map.of("dir", "app", "ref", "main"))))
          .contains("+line 2 via MCP");

      JsonNode badRef = call(stdio, "git_diff", Map.of("dir", "app", "ref", "--output=/tmp/x"));
      assertThat(badRef.path("isError").asBoolean()).isTrue();
      assertThat(text(badRef)).contains("check-ref-format");

      JsonNode off =
          call(
              stdio,
              "git_clone",
              Map.of("url", "http://other.test:" + git.port() + "/app.git", "dir", "off"));
      assertThat(off.path("isError").asBoolean()).isTrue();
      assertThat(text(off)).contains("allow");
    }
  }
}
