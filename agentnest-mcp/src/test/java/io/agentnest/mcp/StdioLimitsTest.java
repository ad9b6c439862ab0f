package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * One bad message must not end the stdio server: raw JSON-RPC over the server's pipes, an oversized
 * or malformed line, then a normal request that must still be answered.
 */
class StdioLimitsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void anOversizedRunPythonIsAnsweredWithTheLimitAndTheServerKeepsServing() throws Exception {
    try (PipedStdio stdio =
        PipedStdio.serveWithoutSandboxes("an oversized call must not reach a sandbox")) {
      stdio.send(PipedStdio.INIT);
      assertThat(stdio.receive().at("/result/serverInfo/name").asText()).isEqualTo("agentnest");
      stdio.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

      // 17 MiB of code, the id after it: found by streaming through the line.
      String big =
          "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"run_python\","
              + "\"arguments\":{\"code\":\"x = '"
              + "a".repeat(17 << 20)
              + "'\"}},\"id\":\"big-1\"}";
      stdio.send(big);
      JsonNode tooLarge = stdio.receive();
      assertThat(tooLarge.path("id").asText()).isEqualTo("big-1");
      assertThat(tooLarge.at("/error/code").asInt()).isEqualTo(StdioMessageGuard.INVALID_REQUEST);
      assertThat(tooLarge.at("/error/message").asText())
          .contains("too large", "16 MiB", "16777216 bytes");
      assertThat(tooLarge.at("/error/data/limit_bytes").asInt()).isEqualTo(16 << 20);

      stdio.send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
      JsonNode list = stdio.receive();
      assertThat(list.path("id").asInt()).isEqualTo(2);
      assertThat(list.at("/result/tools").size()).isEqualTo(16);

      stdio.send("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"");
      JsonNode broken = stdio.receive();
      assertThat(broken.path("id").isNull()).isTrue();
      assertThat(broken.at("/error/code").asInt()).isEqualTo(StdioMessageGuard.PARSE_ERROR);
      stdio.send("[1,2]");
      assertThat(stdio.receive().at("/error/code").asInt())
          .isEqualTo(StdioMessageGuard.PARSE_ERROR);
      stdio.send("{\"jsonrpc\":\"2.0\",\"id\":4}");
      JsonNode noMethod = stdio.receive();
      assertThat(noMethod.path("id").asInt()).isEqualTo(4);
      assertThat(noMethod.at("/error/code").asInt()).isEqualTo(StdioMessageGuard.INVALID_REQUEST);
      stdio.send("");
      stdio.send("{\"jsonrpc\":\"2.0\",\r\"id\":5,\"method\":\"tools/list\"}");
      JsonNode afterAll = stdio.receive();
      assertThat(afterAll.path("id").asInt()).isEqualTo(5);
      assertThat(afterAll.at("/result/tools").size()).isEqualTo(16);

      assertThat(stdio.endsWhenStdinCloses()).as("server ends when stdin closes").isTrue();
    }
  }

  @Test
  void theGuardPassesGoodLinesAndAnswersBadOnesInOrder() throws Exception {
    String input =
        String.join(
            "\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"x\":\""
                + "b".repeat(300)
                + "\"}}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"x\":\""
                + "c".repeat(300)
                + "\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"x\":\"" + "d".repeat(300) + "\"}}",
            "{\"params\":\"" + "e".repeat(300) + "\",\"id\":{\"nested\":1},\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"} trailing",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
    ByteArrayOutputStream answers = new ByteArrayOutputStream();
    StdioMessageGuard g =
        new StdioMessageGuard(
            new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)), answers, 256);
    List<String> passed = new ArrayList<>();
    BufferedReader r = new BufferedReader(new InputStreamReader(g, StandardCharsets.UTF_8));
    String l;
    while ((l = r.readLine()) != null) {
      passed.add(l);
    }
    assertThat(passed)
        .containsExactly(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
    List<JsonNode> errors = new ArrayList<>();
    for (String a : answers.toString(StandardCharsets.UTF_8).split("\n")) {
      errors.add(JSON.readTree(a));
    }
    // The oversized request (id after the big value), a nested id (answered with null), the
    // trailing garbage; the oversized notification and response get no answer.
    assertThat(errors).hasSize(3);
    assertThat(errors.get(0).path("id").asInt()).isEqualTo(7);
    assertThat(errors.get(0).at("/error/message").asText()).contains("256 bytes");
    assertThat(errors.get(1).path("id").isNull()).isTrue();
    assertThat(errors.get(1).at("/error/message").asText()).contains("too large");
    assertThat(errors.get(2).at("/error/code").asInt()).isEqualTo(StdioMessageGuard.PARSE_ERROR);
  }
}
