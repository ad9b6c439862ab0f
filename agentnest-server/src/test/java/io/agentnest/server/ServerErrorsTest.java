package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 42, LOW 18: what a failing engine says (runc and cgroup paths, container ids) stays in the
 * server log; and refused authentications are bounded per key id as well as per address.
 */
class ServerErrorsTest {
  static final String ENGINE_WORDS =
      "OCI runtime create failed: runc create failed: unable to start container process: error"
          + " during container init: /sys/fs/cgroup/system.slice/docker-3f2a9c1e77b04d5a.scope:"
          + " container 3f2a9c1e77b04d5a8e1b already exists";

  static AgentNestServer server(TenantStore store) {
    return new AgentNestServer(
        ServerConfig.parse("listen: {host: 127.0.0.1, port: 0}\n", "test"),
        store,
        sc -> {
          throw new IllegalStateException(ENGINE_WORDS);
        },
        List::of,
        Clock.systemUTC(),
        Map.of());
  }

  @Test
  void aFailedCreateShowsTheTenantNoEnginePathsOrContainerIds(@TempDir Path dir) {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server = server(store)) {
      String key = store.add(new Tenant("t", 2, 1L << 30, 1, 100, null, null), null);
      Http http = new Http(server.start());
      Http.Reply r = http.json("POST", "/v1/sandboxes", key, "{}");
      assertThat(r.status()).as(r.text()).isEqualTo(502);
      assertThat(r.text())
          .doesNotContain("/sys/fs/cgroup", "runc", "3f2a9c1e77b04d5a", "docker-")
          .contains("sandbox_failed", "ref-");
      String ref = r.json().at("/error/reference").asText();
      assertThat(r.json().at("/error/message").asText()).contains(ref);
    }
  }

  @Test
  void guessesAtOneKeyIdAreBoundedWhateverTheAddress(@TempDir Path dir) {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server = server(store)) {
      String key = store.add(new Tenant("t", 2, 1L << 30, 1, 100, null, null), null);
      Http http = new Http(server.start());
      String id = key.substring(0, "ank_".length() + 16 + 1);
      int refused = 0;
      int limited = 0;
      // Fewer than the per-address bound (20/s): only the per-key-id bound (5/s) can answer 429.
      for (int i = 0; i < 12; i++) {
        Http.Reply r = http.get("/v1/tenant", id + "A".repeat(42) + (char) ('a' + i));
        if (r.status() == 401) {
          refused++;
        } else if (r.status() == 429) {
          limited++;
          assertThat(r.text()).contains("failed_authentications_per_key");
        } else {
          throw new AssertionError("a guessed key answered " + r.status() + ": " + r.text());
        }
      }
      assertThat(refused).isBetween(5, 7);
      assertThat(limited).isPositive();
      // The key those guesses aimed at still works: failing on purpose locks nobody out.
      assertThat(http.get("/v1/tenant", key).status()).isEqualTo(200);
      // Another key id from the same address is still looked at.
      assertThat(http.get("/v1/tenant", "ank_" + "0".repeat(16) + "_" + "B".repeat(43)).status())
          .isEqualTo(401);
    }
  }
}
