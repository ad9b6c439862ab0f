package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.docker.DockerEngineRequired;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged {@code agentnest mcp} over stdio, driven with raw JSON-RPC on its pipes: a {@code
 * run_python} call over the 16 MiB message limit is answered with an error naming the limit, and
 * the next call runs in the sandbox as usual.
 */
@ExtendWith(DockerEngineRequired.class)
class McpStdioLimitsIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void anOversizedCallIsRefusedAndTheNextOneRuns(@TempDir Path home) throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
            List.of(NodeTooling.java(), "-jar", NodeTooling.jar().toString(), "mcp"));
    pb.environment().put("AGENTNEST_HOME", home.toString());
    pb.redirectError(home.resolve("stderr.log").toFile());
    Process p = pb.start();
    try {
      OutputStream to = p.getOutputStream();
      BufferedReader from =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      send(
          to,
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
              + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":"
              + "\"1\"}}}");
      assertThat(from.readLine()).contains("\"agentnest\"");
      send(to, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
      send(
          to,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
              + "\"run_python\",\"arguments\":{\"code\":\"x = '"
              + "a".repeat(17 << 20)
              + "'\"}}}");
      JsonNode refused = JSON.readTree(from.readLine());
      assertThat(refused.path("id").asInt()).isEqualTo(2);
      assertThat(refused.at("/error/message").asText()).contains("too large", "16 MiB");
      send(
          to,
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
              + "\"run_python\",\"arguments\":{\"code\":\"6 * 7\"}}}");
      JsonNode ran = JSON.readTree(from.readLine());
      assertThat(ran.path("id").asInt()).isEqualTo(3);
      assertThat(ran.at("/result/content/0/text").asText()).contains("[result]\n42");
      to.close();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the server ends with its stdin").isTrue();
    } finally {
      p.destroyForcibly();
    }
  }

  private static void send(OutputStream out, String line) throws Exception {
    out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }
}
