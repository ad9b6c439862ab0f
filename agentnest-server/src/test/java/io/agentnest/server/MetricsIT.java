package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.agentnest.Sandbox;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /metrics} on the real engine: a sandbox's refused egress attempt is counted by the
 * server's proxy listener, and a create request's {@code limits} reach the kernel.
 */
@ExtendWith(DockerEngineRequired.class)
class MetricsIT {
  private static final String TOKEN = "9a2e".repeat(16);

  @TempDir Path dir;

  @Test
  void aRefusedEgressAttemptIsCountedAndTheRequestsLimitsReachTheSandbox() {
    TenantStore store = TenantStore.open(dir.resolve("tenants.db"), Clock.systemUTC());
    AgentNestServer server =
        new AgentNestServer(
            ServerConfig.parse(
                """
                listen: {host: 127.0.0.1, port: 0}
                policy: {allow_hosts: [example.org]}
                metrics: {token_env: METRICS_TOKEN}
                """,
                "test"),
            store,
            Sandbox::create,
            Sandbox::list,
            Clock.systemUTC(),
            Map.of("METRICS_TOKEN", TOKEN));
    try (TestServer running = new TestServer(store, server, server.start())) {
      String key = running.key(new Tenant("alpha", 3, 2L << 30, 3, 1000, null, null));
      Http http = running.http();
      String id =
          http.created(
              key, "{\"allowHosts\": [\"example.org\"], \"limits\": {\"open_files\": 256}}");

      Http.Reply limits =
          http.json(
              "POST",
              "/v1/sandboxes/" + id + "/exec",
              key,
              "{\"command\": \"ulimit -n; ulimit -Hn\"}");
      // Not on the allowlist: the proxy refuses it before any connection leaves the host.
      Http.Reply refused =
          http.json(
              "POST",
              "/v1/sandboxes/" + id + "/exec",
              key,
              "{\"command\": \"python3 -c 'import urllib.request as u;"
                  + " u.urlopen(\\\"http://denied.example.net/\\\", timeout=20)' || true\"}");

      assertThat(limits.json().path("stdout").asText()).isEqualTo("256\n256\n");
      assertThat(refused.status()).as(refused.text()).isEqualTo(200);
      await()
          .atMost(Duration.ofSeconds(20))
          .untilAsserted(
              () ->
                  assertThat(http.get("/metrics", TOKEN).text())
                      .containsPattern(
                          Pattern.compile(
                              "(?m)^agentnest_egress_connections_total\\{decision=\"denied\"\\}"
                                  + " [1-9]")));
    }
  }
}
