package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.tck.NodePackages;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/frameworks.md's LangChain.js setup, run for real: {@code @langchain/mcp-adapters} starts
 * {@code agentnest mcp} over stdio, loads its tools, and a LangGraph ReAct agent (with a scripted
 * model: no LLM here) calls {@code run_python} twice; the second call sees the first one's
 * variable.
 */
@ExtendWith(DockerEngineRequired.class)
class LangChainMcpIT {
  static final List<String> PACKAGES =
      List.of(
          "@langchain/mcp-adapters@1.1.4", "@langchain/core@1.4.0", "@langchain/langgraph@1.7.3");

  @TempDir Path home;

  @Test
  void aLangGraphAgentCallsRunPythonThroughTheMcpAdapters() throws Exception {
    Path node = NodePackages.install("it-node-langchain", PACKAGES);
    try (InputStream in = getClass().getResourceAsStream("/frameworks/langchain-agent.mjs")) {
      assertThat(in).isNotNull();
      Files.write(node.resolve("langchain-agent.mjs"), in.readAllBytes());
    }
    Processes.Run run =
        Processes.run(
            List.of("node", "langchain-agent.mjs", Processes.java(), Processes.jar().toString()),
            node,
            300,
            Map.of("AGENTNEST_HOME", home.toString()));
    assertThat(run.exit()).as(run.err()).isZero();
    String out = run.out().strip();
    JsonNode r = new ObjectMapper().readTree(out.substring(out.lastIndexOf('\n') + 1));
    assertThat(r.get("tools").toString()).contains("run_python", "run_shell");
    assertThat(r.get("observations")).hasSize(2);
    assertThat(r.get("observations").get(0).asText()).contains("42");
    assertThat(r.get("observations").get(1).asText()).contains("43");
    assertThat(r.get("final").asText()).isEqualTo("x + 1 is 43");
  }
}
