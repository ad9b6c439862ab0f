package io.agentnest.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.support.Percentiles;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * {@code bench --only e2b}: what the E2B face costs, measured as an E2B SDK client talks to it (the
 * JDK's HTTP client sending what the SDK sends): create to first code result (the number hosted E2B
 * is compared on), a warm {@code runCode} through {@code /execute}, a warm {@code
 * commands.run('true')} through envd's Connect stream, each beside the same call made in-process on
 * a local sandbox.
 */
final class E2bBench {
  /** Cold starts measured at most: each is a sandbox's whole life (about a second here). */
  static final int MAX_COLD = 10;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private E2bBench() {}

  record Made(String id, String token) {}

  static void run(
      SandboxConfig config,
      int iterations,
      int warmup,
      Map<String, double[]> samples,
      PrintStream notes) {
    if (!config.backend().equals("docker")) {
      throw new ConfigException(
          "--only e2b runs its server on the Docker engine: drop --backend " + config.backend());
    }
    try (BenchServer server = new BenchServer(4)) {
      String base = server.url.toString();
      int cold = Math.min(iterations, MAX_COLD);
      double[] createFirst = new double[cold];
      for (int i = 0; i < cold; i++) {
        long t0 = System.nanoTime();
        Made m = create(base, server.key);
        execute(base, m, "1 + 1");
        createFirst[i] = (System.nanoTime() - t0) / 1e6;
        kill(base, server.key, m);
      }
      samples.put("e2b create+first result", createFirst);

      int warm = Math.max(warmup, ServerBench.MIN_WARMUP);
      Made m = create(base, server.key);
      double[] code = new double[iterations];
      double[] command = new double[iterations];
      for (int i = 0; i < warm; i++) {
        execute(base, m, "x = 1");
        command(base, m, "true");
      }
      for (int i = 0; i < iterations; i++) {
        long t0 = System.nanoTime();
        execute(base, m, "x = 1");
        code[i] = (System.nanoTime() - t0) / 1e6;
        long t1 = System.nanoTime();
        command(base, m, "true");
        command[i] = (System.nanoTime() - t1) / 1e6;
      }
      samples.put("e2b runCode warm", code);
      samples.put("e2b commands.run warm", command);

      double[] localCode = new double[iterations];
      double[] localExec = new double[iterations];
      try (Sandbox local = Sandbox.create(config)) {
        for (int i = 0; i < warm; i++) {
          check(local.runCode("x = 1"));
          check(local.exec("true"));
        }
        for (int i = 0; i < iterations; i++) {
          long t0 = System.nanoTime();
          check(local.runCode("x = 1"));
          localCode[i] = (System.nanoTime() - t0) / 1e6;
          long t1 = System.nanoTime();
          check(local.exec("true"));
          localExec[i] = (System.nanoTime() - t1) / 1e6;
        }
      }
      samples.put("e2b baseline runCode in-process", localCode);
      samples.put("e2b baseline exec in-process", localExec);
      notes.printf(
          "e2b: create to first result p50 %.0f ms; runCode p50 %.2f ms vs %.2f in-process (+%.2f);"
              + " commands.run p50 %.2f ms vs %.2f in-process (+%.2f)%n",
          p50(createFirst),
          p50(code),
          p50(localCode),
          p50(code) - p50(localCode),
          p50(command),
          p50(localExec),
          p50(command) - p50(localExec));
    }
  }

  private static double p50(double[] ms) {
    return Percentiles.nearestRank(ms, 50);
  }

  private static void check(ExecResult r) {
    if (!r.ok()) {
      throw new AgentNestException("benchmark call failed: " + BenchSteps.describe(r, null));
    }
  }

  static Made create(String base, String key) {
    HttpResponse<String> r =
        send(
            HttpRequest.newBuilder(URI.create(base + "/e2b/sandboxes"))
                .header("X-API-KEY", key)
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"templateID\":\"base\",\"timeout\":900}"))
                .build());
    if (r.statusCode() != 201) {
      throw new AgentNestException("E2B create failed: " + r.statusCode() + " " + r.body());
    }
    try {
      JsonNode n = JSON.readTree(r.body());
      return new Made(n.get("sandboxID").asText(), n.get("envdAccessToken").asText());
    } catch (IOException e) {
      throw new AgentNestException("E2B create answered no JSON: " + r.body(), e);
    }
  }

  static void kill(String base, String key, Made m) {
    send(
        HttpRequest.newBuilder(URI.create(base + "/e2b/sandboxes/" + m.id()))
            .header("X-API-KEY", key)
            .DELETE()
            .build());
  }

  static void execute(String base, Made m, String code) {
    HttpResponse<String> r =
        send(
            sandbox(base + "/e2b/sandbox/execute", m, "49999")
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"code\":" + JSON.valueToTree(code) + "}"))
                .build());
    if (r.statusCode() != 200
        || !r.body().contains("end_of_execution")
        || r.body().contains("\"type\":\"error\"")) {
      throw new AgentNestException("E2B runCode failed: " + r.statusCode() + " " + r.body());
    }
  }

  static void command(String base, Made m, String cmd) {
    byte[] msg =
        ("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\","
                + JSON.valueToTree(cmd)
                + "]}}")
            .getBytes(StandardCharsets.UTF_8);
    ByteBuffer env = ByteBuffer.allocate(5 + msg.length).put((byte) 0).putInt(msg.length).put(msg);
    HttpResponse<String> r =
        send(
            sandbox(base + "/e2b/sandbox/process.Process/Start", m, "49983")
                .header("Content-Type", "application/connect+json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(env.array()))
                .build());
    if (r.statusCode() != 200 || !r.body().contains("\"end\"") || r.body().contains("\"error\"")) {
      throw new AgentNestException("E2B command failed: " + r.statusCode() + " " + r.body());
    }
  }

  private static HttpRequest.Builder sandbox(String url, Made m, String port) {
    return HttpRequest.newBuilder(URI.create(url))
        .timeout(Duration.ofSeconds(60))
        .header("E2b-Sandbox-Id", m.id())
        .header("E2b-Sandbox-Port", port)
        .header("X-Access-Token", m.token());
  }

  private static HttpResponse<String> send(HttpRequest req) {
    try {
      return HTTP.send(req, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new AgentNestException("E2B request failed: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted", e);
    }
  }
}
