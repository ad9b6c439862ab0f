package io.agentnest.server.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotInfo;
import io.agentnest.server.FakeSandboxes;
import io.agentnest.server.Http;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.tenancy.Tenant;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The quotas the third pass found holes in: pidsLimit (a tenant asked for 100000), E2B-paused
 * sandboxes (a tenant limited to 3 held 6 paused and 1 running) and snapshots (no bound on count or
 * bytes). Each test asks for what the quota forbids and expects a refusal naming the quota.
 */
class QuotaHolesTest {
  @TempDir Path dir;

  private static Tenant tenant(int maxSandboxes, @Nullable Long maxPids) {
    return new Tenant(
        "alpha", maxSandboxes, 8L << 30, 8, 1000, null, null, 0, null, null, null, maxPids);
  }

  @Test
  void aHugePidsLimitIsRefusedNamingPolicyMaxPids() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(tenant(5, null), null);
      Http.Reply r = running.http().json("POST", "/v1/sandboxes", key, "{\"pidsLimit\": 100000}");
      assertThat(r.status()).as(r.text()).isEqualTo(422);
      assertThat(r.text()).contains("pidsLimit", "policy.max_pids", "8..1024");
      assertThat(running.created).isEmpty();

      assertThat(running.http().json("POST", "/v1/sandboxes", key, "{\"pidsLimit\": 512}").status())
          .isEqualTo(201);
      assertThat(running.http().json("POST", "/v1/sandboxes", key, "{}").status()).isEqualTo(201);
      assertThat(running.created)
          .extracting(SandboxConfig::pidsLimit)
          .containsExactly(512L, SandboxConfig.defaults().pidsLimit());
    }
  }

  @Test
  void aTenantsOwnPidsCapAndTheServersMaxPidsBothHold() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "policy:\n  max_pids: 300\n")) {
      String key = running.store.add(tenant(5, 100L), null);
      Http.Reply r = running.http().json("POST", "/v1/sandboxes", key, "{\"pidsLimit\": 200}");
      assertThat(r.status()).as(r.text()).isEqualTo(422);
      assertThat(r.text()).contains("8..100");
      // No pidsLimit asked: the sandbox's default (256) is bounded by the tenant's cap.
      assertThat(running.http().json("POST", "/v1/sandboxes", key, "{}").status()).isEqualTo(201);
      assertThat(running.created.get(0).pidsLimit()).isEqualTo(100L);
    }
  }

  @Test
  void e2bPausedSandboxesCountInTheSandboxesQuota() throws Exception {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(tenant(2, null), null);
      Http http = running.http();
      String first = e2bCreate(http, key).get("sandboxID").asText();
      e2bCreate(http, key);
      Http.Reply paused =
          http.send(
              "POST", "/e2b/sandboxes/" + first + "/pause", null, new byte[0], "application/json");
      assertThat(paused.status()).isEqualTo(401); // the key is needed; sent below
      paused = e2b(http, key, "/e2b/sandboxes/" + first + "/pause", "{}");
      assertThat(paused.status()).as(paused.text()).isEqualTo(204);

      // One running and one paused: the tenant limited to 2 is full.
      Http.Reply third = e2b(http, key, "/e2b/sandboxes", "{\"templateID\": \"base\"}");
      assertThat(third.status()).as(third.text()).isEqualTo(429);
      assertThat(third.text()).contains("quota 'sandboxes' is full: limit 2, in use 2");
      Http.Reply v1 = http.json("POST", "/v1/sandboxes", key, "{}");
      assertThat(v1.status()).as(v1.text()).isEqualTo(429);
      assertThat(http.get("/v1/tenant", key).json().path("usage").path("sandboxes").asInt())
          .isEqualTo(2);
    }
  }

  @Test
  void theSnapshotCountQuotaRefusesTheNextSaveNamingIt() {
    List<SnapshotInfo> store = new ArrayList<>();
    SnapshotQuota quota = new SnapshotQuota(() -> List.copyOf(store));
    Policies.Effective p =
        Policies.effective(
            ServerConfig.parse("policy:\n  max_snapshots: 2\n", "test").policy(), tenant(5, null));
    store.add(info("alpha.a", 10));
    store.add(info("beta.x", 10)); // another tenant's: not counted
    assertThat(quota.within(p, "alpha.", "alpha.b", () -> info("alpha.b", 10), n -> {}).name())
        .isEqualTo("alpha.b");
    store.add(info("alpha.b", 10));
    assertThatThrownBy(
            () -> quota.within(p, "alpha.", "alpha.c", () -> info("alpha.c", 1), n -> {}))
        .isInstanceOf(ApiException.class)
        .hasMessageContaining("quota 'snapshots' is full: limit 2, in use 2")
        .satisfies(e -> assertThat(((ApiException) e).status()).isEqualTo(429))
        .satisfies(e -> assertThat(((ApiException) e).fix()).contains("DELETE /v1/snapshots"));
    // Replacing one of its own takes that one's place.
    assertThat(quota.within(p, "alpha.", "alpha.a", () -> info("alpha.a", 1), n -> {}).name())
        .isEqualTo("alpha.a");
  }

  @Test
  void theSnapshotBytesQuotaRemovesASaveThatWentOverIt() {
    List<SnapshotInfo> store = new ArrayList<>(List.of(info("alpha.a", 600)));
    SnapshotQuota quota = new SnapshotQuota(() -> List.copyOf(store));
    Policies.Effective p =
        Policies.effective(
            ServerConfig.parse("policy:\n  max_snapshot_bytes: 1k\n", "test").policy(),
            tenant(5, null));
    List<String> removed = new ArrayList<>();
    assertThatThrownBy(
            () ->
                quota.within(p, "alpha.", "alpha.big", () -> info("alpha.big", 500), removed::add))
        .isInstanceOf(ApiException.class)
        .hasMessageContaining("quota 'snapshot_bytes' is full: limit 1k, in use 1.1k");
    assertThat(removed).containsExactly("alpha.big");
    store.add(info("alpha.b", 500));
    // Already over: refused before anything is written.
    assertThatThrownBy(
            () ->
                quota.within(
                    p,
                    "alpha.",
                    "alpha.c",
                    () -> {
                      throw new AssertionError("saved past a full quota");
                    },
                    removed::add))
        .hasMessageContaining("quota 'snapshot_bytes' is full");
  }

  private static SnapshotInfo info(String name, long bytes) {
    return new SnapshotInfo(
        name,
        Instant.now(),
        "agentnest/python:latest",
        "sha256:x",
        null,
        bytes,
        List.of(),
        false,
        "",
        SandboxConfig.defaults());
  }

  private static JsonNode e2bCreate(Http http, String key) {
    Http.Reply r = e2b(http, key, "/e2b/sandboxes", "{\"templateID\": \"base\"}");
    assertThat(r.status()).as(r.text()).isEqualTo(201);
    return r.json();
  }

  private static Http.Reply e2b(Http http, String key, String path, String json) {
    // Bearer works on the E2B API as X-API-KEY does.
    return http.json("POST", path, key, json);
  }
}
