package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import io.agentnest.spi.RuntimeBackend;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged {@code agentnest mcp} over stdio, driven with raw JSON-RPC on its pipes: a {@code
 * run_python} call over the 16 MiB message limit is answered with an error naming the limit, and
 * the next call runs in the sandbox as usual; {@code run_shell} stays inside /workspace.
 */
@ExtendWith(DockerEngineRequired.class)
class McpStdioRawIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** {@code agentnest mcp} on stdio, initialized, with a temporary AGENTNEST_HOME. */
  record Server(Process process, OutputStream to, BufferedReader from) implements AutoCloseable {
    JsonNode call(int id, String tool, String arguments) throws Exception {
      send(
          to,
          "{\"jsonrpc\":\"2.0\",\"id\":"
              + id
              + ",\"method\":\"tools/call\",\"params\":{\"name\":\""
              + tool
              + "\",\"arguments\":"
              + arguments
              + "}}");
      JsonNode r = JSON.readTree(from.readLine());
      assertThat(r.path("id").asInt()).isEqualTo(id);
      return r;
    }

    @Override
    public void close() throws Exception {
      to.close();
      assertThat(process.waitFor(60, TimeUnit.SECONDS))
          .as("the server ends with its stdin")
          .isTrue();
      process.destroyForcibly();
    }
  }

  static Server start(Path home, String... options) throws Exception {
    List<String> cmd = new ArrayList<>(Processes.cli("mcp"));
    cmd.addAll(List.of(options));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("AGENTNEST_HOME", home.toString());
    pb.redirectError(home.resolve("stderr.log").toFile());
    Process p = pb.start();
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
    return new Server(p, to, from);
  }

  @Test
  void anOversizedCallIsRefusedAndTheNextOneRuns(@TempDir Path home) throws Exception {
    try (Server s = start(home)) {
      send(
          s.to(),
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
              + "\"run_python\",\"arguments\":{\"code\":\"x = '"
              + "a".repeat(17 << 20)
              + "'\"}}}");
      JsonNode refused = JSON.readTree(s.from().readLine());
      assertThat(refused.path("id").asInt()).isEqualTo(2);
      assertThat(refused.at("/error/message").asText()).contains("too large", "16 MiB");
      JsonNode ran = s.call(3, "run_python", "{\"code\":\"6 * 7\"}");
      assertThat(ran.at("/result/content/0/text").asText()).contains("[result]\n42");
    }
  }

  @Test
  void runShellRunsInsideTheWorkspaceOnly(@TempDir Path home) throws Exception {
    try (Server s = start(home)) {
      JsonNode etc = s.call(2, "run_shell", "{\"command\":\"pwd; ls\",\"workdir\":\"/etc\"}");
      assertThat(etc.at("/result/isError").asBoolean()).isTrue();
      assertThat(etc.at("/result/content/0/text").asText())
          .contains("'/etc' is outside /workspace")
          .doesNotContain("passwd");
      JsonNode up = s.call(3, "run_shell", "{\"command\":\"pwd\",\"workdir\":\"../..\"}");
      assertThat(up.at("/result/content/0/text").asText()).contains("BAD_PATH");
      s.call(4, "run_shell", "{\"command\":\"mkdir -p sub && ln -s /etc sub/out\"}");
      JsonNode link = s.call(5, "run_shell", "{\"command\":\"pwd\",\"workdir\":\"sub/out\"}");
      assertThat(link.at("/result/isError").asBoolean()).isTrue();
      assertThat(link.at("/result/content/0/text").asText()).doesNotContain("[stdout]\n/etc");
      JsonNode inside =
          s.call(6, "run_shell", "{\"command\":\"pwd\",\"workdir\":\"/workspace/sub\"}");
      assertThat(inside.at("/result/content/0/text").asText()).contains("/workspace/sub\n");
      JsonNode relative = s.call(7, "run_shell", "{\"command\":\"pwd\",\"workdir\":\"sub\"}");
      assertThat(relative.at("/result/content/0/text").asText()).contains("/workspace/sub\n");
    }
  }

  @Test
  void theProfilesPoolServesTheServersSandboxesAndEndsWithIt(@TempDir Path home) throws Exception {
    String pool = "mcp-it-" + Long.toHexString(System.nanoTime());
    Path yaml = home.resolve("agentnest.yaml");
    Files.writeString(
        yaml,
        "profiles:\n  pooled:\n    pool:\n      name: "
            + pool
            + "\n      min_idle: 1\n      max_total: 2\n");
    RuntimeBackend docker = Backends.get("docker");
    try (Server s = start(home, "--config", yaml.toString(), "--profile", "pooled")) {
      await().atMost(Duration.ofSeconds(90)).until(() -> members(docker, pool), n -> n >= 1);
      JsonNode ran = s.call(2, "run_python", "{\"code\":\"6 * 7\"}");
      assertThat(ran.at("/result/content/0/text").asText()).contains("[result]\n42");
    }
    try (AuditLog log = AuditLog.open(home.resolve("audit"))) {
      List<AuditEvent> acquired =
          log.query(AuditQuery.builder().type(AuditEvent.SANDBOX_ACQUIRED).build());
      assertThat(acquired).hasSize(1);
      assertThat(acquired.get(0).data()).containsEntry("pool", pool);
    }
    // The server's end is the pool's: no member outlives it.
    assertThat(members(docker, pool)).isZero();
  }

  private static long members(RuntimeBackend docker, String pool) {
    return docker.list().stream().filter(i -> pool.equals(i.labels().get(Labels.POOL))).count();
  }

  private static void send(OutputStream out, String line) throws Exception {
    out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }
}
