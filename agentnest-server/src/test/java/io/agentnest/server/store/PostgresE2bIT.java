package io.agentnest.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.server.FakeSandboxes;
import io.agentnest.server.Http;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * E2B state in the shared store: a server restarted on the same database (which adopts the
 * sandboxes its predecessor left running) hands the E2B clients the tokens they already hold, with
 * their template and metadata; a revoked key still ends them, and a killed sandbox leaves nothing.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PostgresE2bIT {
  private static final String SERVER_YAML = "max_json: 64k\nmax_body: 1m\n";

  private TestPostgres pg;
  private String key;

  @BeforeEach
  void database() {
    pg = TestPostgres.create();
  }

  @AfterEach
  void drop() throws SQLException {
    if (pg != null) { // null when the test was skipped for want of PostgreSQL
      pg.close();
    }
  }

  private static JsonNode e2b(Http http, String method, String path, String key, String json) {
    Http.Reply r = http.json(method, path, key, json);
    assertThat(r.status()).as(r.text()).isBetween(200, 201);
    return r.json();
  }

  @Test
  void aRestartedServerHandsOutTheTokensItsClientsHold() throws Exception {
    JsonNode made;
    String second;
    // The same server's home before and after: a restart, which adopts what it left running.
    try (FakeSandboxes before = new FakeSandboxes(pg.shared("/srv/e2b"), SERVER_YAML, "a")) {
      key = before.store.add(new Tenant("e2b", 3, 1L << 33, 4, 1000, null, null, 0), null);
      second = before.store.issueKey("e2b", null);
      made =
          e2b(
              before.http(),
              "POST",
              "/e2b/sandboxes",
              key,
              "{\"templateID\": \"base\", \"metadata\": {\"user\": \"o'brien\"}}");
      // A second key gets the same tokens, now bound to both keys.
      JsonNode again =
          e2b(before.http(), "GET", "/e2b/sandboxes/" + made.get("sandboxID").asText(), second, "");
      assertThat(again.get("envdAccessToken").asText())
          .isEqualTo(made.get("envdAccessToken").asText());

      try (FakeSandboxes after = new FakeSandboxes(pg.shared("/srv/e2b"), SERVER_YAML, "b")) {
        assertThat(after.adopt(before)).isEqualTo(1);
        String id = made.get("sandboxID").asText();
        JsonNode seen = e2b(after.http(), "GET", "/e2b/sandboxes/" + id, key, "");
        assertThat(seen.get("envdAccessToken").asText())
            .isEqualTo(made.get("envdAccessToken").asText());
        assertThat(seen.get("trafficAccessToken").asText())
            .isEqualTo(made.get("trafficAccessToken").asText());
        assertThat(seen.get("templateID").asText()).isEqualTo("base");
        assertThat(seen.get("metadata").get("user").asText()).isEqualTo("o'brien");

        // Revoking a key the tokens went to still ends them: the next hand-out makes new ones.
        assertThat(after.store.revoke(TenantStore.keyId(second))).isTrue();
        JsonNode renewed = e2b(after.http(), "GET", "/e2b/sandboxes/" + id, key, "");
        assertThat(renewed.get("envdAccessToken").asText())
            .isNotEqualTo(made.get("envdAccessToken").asText());
        assertThat(kept(id)).containsExactly(renewed.get("envdAccessToken").asText());

        Http.Reply killed = after.http().delete("/e2b/sandboxes/" + id, key);
        assertThat(killed.status()).as(killed.text()).isBetween(200, 204);
        assertThat(kept(id)).isEmpty();
      }
    }
  }

  @Test
  void metadataWithANulIsRefusedAndNothingIsKept() throws Exception {
    try (FakeSandboxes s = new FakeSandboxes(pg.shared(), SERVER_YAML, "a")) {
      key = s.store.add(new Tenant("e2b", 3, 1L << 33, 4, 1000, null, null, 0), null);
      Http.Reply r =
          s.http()
              .json(
                  "POST",
                  "/e2b/sandboxes",
                  key,
                  "{\"templateID\": \"base\", \"metadata\": {\"k\": \"a\\u0000b\"}}");
      assertThat(r.status()).isEqualTo(400);
      assertThat(r.text()).contains("NUL");
      assertThat(count()).isZero();
    }
  }

  /** The envd token kept for E2B id {@code id} (empty when nothing is kept). */
  private List<String> kept(String id) throws SQLException {
    try (Connection c = pg.connect();
        PreparedStatement p =
            c.prepareStatement("SELECT envd_token FROM e2b_sandboxes WHERE id = ?")) {
      p.setString(1, id);
      try (ResultSet r = p.executeQuery()) {
        return r.next() ? List.of(r.getString(1)) : List.of();
      }
    }
  }

  private long count() throws SQLException {
    try (Connection c = pg.connect();
        PreparedStatement p = c.prepareStatement("SELECT count(*) FROM e2b_sandboxes");
        ResultSet r = p.executeQuery()) {
      r.next();
      return r.getLong(1);
    }
  }
}
