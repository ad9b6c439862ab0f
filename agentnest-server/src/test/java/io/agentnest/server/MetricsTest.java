package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalRequest;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /metrics}: off by default, readable only with the scrape token, and what it counts:
 * sandboxes by tenant, requests by route template (never an id), refusals by error code, approval
 * decisions.
 */
class MetricsTest {
  private static final String TOKEN = "3f1c".repeat(16);
  private static final String YAML = "metrics: {token_env: TEST_METRICS_TOKEN}\n";
  private static final Map<String, String> ENV = Map.of("TEST_METRICS_TOKEN", TOKEN);

  @TempDir Path dir;

  private static Tenant tenant(String name, int maxSandboxes) {
    return new Tenant(name, maxSandboxes, 8L << 30, 8, 1000, null, null, 0, null, null, null, null);
  }

  /** The value of the one sample of {@code name} whose labels include every one of {@code has}. */
  private static double sample(String text, String name, String... has) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{(.*)\\} (\\S+)$").matcher(text);
    double found = Double.NaN;
    while (m.find()) {
      String labels = m.group(1);
      boolean all = true;
      for (String h : has) {
        all &= labels.contains(h);
      }
      if (all) {
        assertThat(found).as("more than one sample of %s with %s", name, has).isNaN();
        found = Double.parseDouble(m.group(2));
      }
    }
    return found;
  }

  @Test
  void metricsAreOffUnlessTheServerNamesAScrapeToken() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      Http.Reply r = running.http().get("/metrics", null);

      assertThat(r.status()).isEqualTo(404);
      assertThat(r.text()).contains("metrics are off").contains("token_env");
    }
  }

  @Test
  void onlyTheScrapeTokenReadsThemNotATenantKeyNorAWrongToken() {
    try (FakeSandboxes running = new FakeSandboxes(dir, YAML, ENV)) {
      String key = running.store.add(tenant("alpha", 5), null);
      Http http = running.http();

      assertThat(http.get("/metrics", null).status()).isEqualTo(401);
      assertThat(http.get("/metrics", key).status()).isEqualTo(401);
      assertThat(http.get("/metrics", TOKEN.substring(1) + "0").status()).isEqualTo(401);
      Http.Reply ok = http.get("/metrics", TOKEN);
      assertThat(ok.status()).isEqualTo(200);
      assertThat(ok.raw().headers().firstValue("Content-Type").orElse(""))
          .startsWith("text/plain; version=0.0.4");
      assertThat(ok.text()).contains("jvm_memory_used_bytes", "process_uptime_seconds");
    }
  }

  @Test
  void guessingTheTokenIsSlowedDownLikeGuessingAKey() {
    try (FakeSandboxes running = new FakeSandboxes(dir, YAML, ENV)) {
      Http http = running.http();
      int limited = 0;
      for (int i = 0; i < AuthFailures.PER_ADDRESS + 5; i++) {
        if (http.get("/metrics", "wrong-" + i).status() == 429) {
          limited++;
        }
      }
      assertThat(limited).isPositive();
    }
  }

  @Test
  void sandboxesRequestsAndRefusalsAreCountedByTenantRouteAndCode() {
    try (FakeSandboxes running = new FakeSandboxes(dir, YAML, ENV)) {
      String alpha = running.store.add(tenant("alpha", 2), null);
      String beta = running.store.add(tenant("beta", 5), null);
      Http http = running.http();
      String id = http.created(alpha, "{}");
      http.created(alpha, "{}");
      http.created(beta, "{}");
      assertThat(http.json("POST", "/v1/sandboxes", alpha, "{}").status()).isEqualTo(429);
      assertThat(http.get("/v1/sandboxes/" + id, alpha).status()).isEqualTo(200);

      String text = http.get("/metrics", TOKEN).text();

      assertThat(sample(text, "agentnest_sandboxes", "tenant=\"alpha\"", "state=\"running\""))
          .isEqualTo(2.0);
      assertThat(sample(text, "agentnest_sandboxes", "tenant=\"beta\"", "state=\"running\""))
          .isEqualTo(1.0);
      assertThat(
              sample(
                  text,
                  "agentnest_http_server_requests_seconds_count",
                  "route=\"/v1/sandboxes\"",
                  "method=\"POST\"",
                  "status=\"201\""))
          .isEqualTo(3.0);
      assertThat(
              sample(
                  text,
                  "agentnest_http_server_requests_seconds_count",
                  "route=\"/v1/sandboxes\"",
                  "code=\"quota\"",
                  "status=\"429\""))
          .isEqualTo(1.0);
      assertThat(
              sample(
                  text,
                  "agentnest_http_server_requests_seconds_count",
                  "route=\"/v1/sandboxes/{id}\"",
                  "method=\"GET\""))
          .isEqualTo(1.0);
      // A latency histogram with fixed buckets, and no sandbox id in any label.
      assertThat(text).contains("agentnest_http_server_requests_seconds_bucket{");
      assertThat(text).doesNotContain(id);
    }
  }

  @Test
  void approvalDecisionsAndQuestionsWaitingAreCounted() throws Exception {
    try (FakeSandboxes running = new FakeSandboxes(dir, YAML, ENV)) {
      running.store.add(tenant("alpha", 2), null);
      ApprovalRequest q =
          new ApprovalRequest("sb-1", "file.delete", "/workspace/x", "rm x", Instant.now());

      var waiting = running.approvalHandler("alpha", Duration.ofSeconds(30)).decide(q);
      String during = running.http().get("/metrics", TOKEN).text();
      ApprovalDecision timedOut =
          running
              .approvalHandler("alpha", Duration.ofMillis(200))
              .decide(q)
              .toCompletableFuture()
              .get();
      running.server.approvals().denyAll();
      waiting.toCompletableFuture().get();

      assertThat(timedOut.allowed()).isFalse();
      assertThat(during).containsPattern("(?m)^agentnest_approvals_waiting 1\\.0$");
      // The count follows the decision on the thread that completed it: wait for it, bounded.
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () -> {
                String after = running.http().get("/metrics", TOKEN).text();
                assertThat(after).containsPattern("(?m)^agentnest_approvals_waiting 0\\.0$");
                assertThat(
                        sample(
                            after,
                            "agentnest_approvals_decided_total",
                            "outcome=\"denied_by_server\""))
                    .isEqualTo(2.0);
              });
    }
  }

  @Test
  void aTokenVariableThatIsMissingOrShortStopsTheServerNamingIt() {
    ServerConfig c =
        ServerConfig.parse("listen: {host: 127.0.0.1, port: 0}\n" + YAML, "server.yaml");

    assertThatThrownBy(() -> MetricsEndpoint.token(c.metrics(), Map.of()))
        .hasMessageContaining("TEST_METRICS_TOKEN, which is not set");
    assertThatThrownBy(() -> MetricsEndpoint.token(c.metrics(), Map.of("TEST_METRICS_TOKEN", "x")))
        .hasMessageContaining("at least 32");
    assertThatThrownBy(() -> ServerConfig.parse("metrics: {}\n", "server.yaml"))
        .hasMessageContaining("metrics needs token_env");
    assertThatThrownBy(() -> ServerConfig.parse("metrics: {token: x}\n", "server.yaml"))
        .hasMessageContaining("unknown key 'token'");
  }
}
