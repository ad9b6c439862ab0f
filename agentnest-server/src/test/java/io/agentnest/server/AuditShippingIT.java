package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.agentnest.audit.AuditEvent;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.logs.v1.LogRecord;
import io.opentelemetry.proto.logs.v1.ResourceLogs;
import io.opentelemetry.proto.logs.v1.ScopeLogs;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code audit.sinks} end to end: a server started from server.yaml ships a real sandbox's records
 * (created on the engine, a command run in it) to a syslog collector and an OTLP/HTTP receiver this
 * test runs on loopback.
 */
@ExtendWith(DockerEngineRequired.class)
class AuditShippingIT {
  private static final Pattern SD =
      Pattern.compile(
          "\\[agentnest@32473 seq=\"([0-9]+)\"(?: sandbox=\"([^\"]*)\")?"
              + "(?: tenant=\"([^\"]*)\")? hash=\"([0-9a-f]{64})\"\\] \uFEFF(.*)$");

  @Test
  void aSandboxsRecordsReachTheCollectorTaggedWithItsTenant(@TempDir Path dir) throws Exception {
    List<String> messages = new CopyOnWriteArrayList<>();
    List<LogRecord> otlp = new CopyOnWriteArrayList<>();
    HttpServer receiver =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8);
    receiver.createContext(
        "/v1/logs",
        x -> {
          try (InputStream raw = x.getRequestBody();
              InputStream in =
                  "gzip".equals(x.getRequestHeaders().getFirst("Content-Encoding"))
                      ? new GZIPInputStream(raw)
                      : raw) {
            ExportLogsServiceRequest req =
                ExportLogsServiceRequest.parseFrom(in.readNBytes(8 << 20));
            for (ResourceLogs rl : req.getResourceLogsList()) {
              for (ScopeLogs sl : rl.getScopeLogsList()) {
                otlp.addAll(sl.getLogRecordsList());
              }
            }
            x.sendResponseHeaders(200, -1);
          } finally {
            x.close();
          }
        });
    receiver.start();
    try (ServerSocket collector = new ServerSocket()) {
      collector.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      Thread reader = new Thread(() -> collect(collector, messages), "test-syslog-collector");
      reader.setDaemon(true);
      reader.start();
      String yaml =
          """
          listen: {host: 127.0.0.1, port: 0}
          max_json: 64k
          audit:
            sinks:
              - {type: syslog, transport: tcp, host: 127.0.0.1, port: %d, facility: local0}
              - {type: otlp, endpoint: "http://127.0.0.1:%d"}
          """
              .formatted(collector.getLocalPort(), receiver.getAddress().getPort());
      try (TestServer running = TestServer.start(dir, ServerConfig.parse(yaml, "server.yaml"))) {
        Http http = running.http();
        String key = running.key(new Tenant("shipit", 2, 2L << 30, 2, 1000, null, null));
        String id = http.created(key, "{\"memoryBytes\": 268435456}");
        String forged = "echo 'x\\n<13>1 2026-12-04T00:00:00Z evil agentnest 1 forged - forged'";
        Http.Reply ran =
            http.json(
                "POST",
                "/v1/sandboxes/" + id + "/exec",
                key,
                "{\"command\": \"" + forged.replace("\\", "\\\\") + "\"}");
        assertThat(ran.status()).as(ran.text()).isEqualTo(200);

        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> types(messages, id).contains(AuditEvent.EXEC_FINISHED));
        List<String> types = types(messages, id);
        assertThat(types).contains(AuditEvent.SANDBOX_CREATED, AuditEvent.EXEC_STARTED);
        for (String m : messages) {
          Matcher sd = SD.matcher(m);
          assertThat(sd.find()).as(m).isTrue();
          if (id.equals(sd.group(2))) {
            assertThat(sd.group(3)).as(m).isEqualTo("shipit");
            AuditEvent e = AuditEvent.fromJson(sd.group(5));
            assertThat(e.hash()).isEqualTo(sd.group(4));
            assertThat(m).matches("<13[2-4]>1 .*");
          }
          assertThat(m).doesNotContain("\n").doesNotContain("evil agentnest 1 forged - forged\n");
        }
        assertThat(messages).noneMatch(m -> m.startsWith("<13>"));

        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    otlp.stream()
                        .anyMatch(
                            r ->
                                id.equals(attr(r, "agentnest.sandbox"))
                                    && AuditEvent.EXEC_FINISHED.equals(attr(r, "agentnest.type"))));
        for (LogRecord r : otlp) {
          if (id.equals(attr(r, "agentnest.sandbox"))) {
            assertThat(attr(r, "agentnest.tenant")).isEqualTo("shipit");
            AuditEvent e = AuditEvent.fromJson(r.getBody().getStringValue());
            assertThat(e.hash()).isEqualTo(attr(r, "agentnest.hash"));
          }
        }

        // The counters cover every tenant's records: the operator's, not a tenant's.
        assertThat(http.get("/v1/audit/shipping", key).status()).isEqualTo(403);
        Http.Reply stats = AuditAccessTest.asAdmin(http, running.store(), "/v1/audit/shipping");
        assertThat(stats.status()).isEqualTo(200);
        assertThat(stats.json().at("/sinks/0/target").asText())
            .startsWith("syslog+tcp://127.0.0.1:");
        assertThat(stats.json().at("/sinks/0/sent").asLong()).isPositive();
        assertThat(stats.json().at("/sinks/0/dropped").asLong()).isZero();
        assertThat(stats.json().at("/sinks/1/target").asText())
            .startsWith("otlp+http://127.0.0.1:");
        assertThat(stats.json().at("/sinks/1/sent").asLong()).isPositive();
      }
    } finally {
      receiver.stop(0);
    }
  }

  private static String attr(LogRecord r, String key) {
    for (KeyValue kv : r.getAttributesList()) {
      if (kv.getKey().equals(key)) {
        return kv.getValue().getStringValue();
      }
    }
    return "";
  }

  private static List<String> types(List<String> messages, String sandbox) {
    return messages.stream()
        .map(SD::matcher)
        .filter(m -> m.find() && sandbox.equals(m.group(2)))
        .map(m -> AuditEvent.fromJson(m.group(5)).type())
        .toList();
  }

  // Octet-counted frames (RFC 6587), at most 100,000 of them, each at most 1 MiB.
  private static void collect(ServerSocket server, List<String> out) {
    try (Socket s = server.accept();
        InputStream in = s.getInputStream()) {
      for (int n = 0; n < 100_000; n++) {
        int len = 0;
        int c;
        int digits = 0;
        while ((c = in.read()) >= '0' && c <= '9' && digits++ < 7) {
          len = len * 10 + (c - '0');
        }
        if (c != ' ' || len > (1 << 20)) {
          return;
        }
        byte[] b = in.readNBytes(len);
        if (b.length != len) {
          return;
        }
        out.add(new String(b, StandardCharsets.UTF_8));
      }
    } catch (IOException closed) {
      // The test is over.
    }
  }
}
