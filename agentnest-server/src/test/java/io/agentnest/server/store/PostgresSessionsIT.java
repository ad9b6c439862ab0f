package io.agentnest.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.server.FakeSandboxes;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Console sessions in the shared store: a browser signed in through server A is signed in on server
 * B, signing out on B ends it on A, and a revoked key ends it everywhere. The database keeps only
 * the hash of a session id.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PostgresSessionsIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private TestPostgres pg;
  private FakeSandboxes a;
  private FakeSandboxes b;
  private String key;

  @BeforeEach
  void twoServers() {
    pg = TestPostgres.create();
    a = new FakeSandboxes(pg.shared(), "", "a");
    b = new FakeSandboxes(pg.shared(), "", "b");
    key = a.store.add(new Tenant("web", 2, 1L << 32, 2, 1000, null, null, 0), null);
  }

  @AfterEach
  void stop() throws SQLException {
    if (pg == null) {
      return; // skipped for want of PostgreSQL
    }
    try {
      a.close();
      b.close();
    } finally {
      pg.close();
    }
  }

  private HttpResponse<String> send(FakeSandboxes s, String method, String body, String... headers)
      throws Exception {
    HttpRequest.Builder r =
        HttpRequest.newBuilder(URI.create(s.http().base() + "/console/session"))
            .timeout(Duration.ofSeconds(30))
            .method(method, HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      r.header(headers[i], headers[i + 1]);
    }
    return client.send(r.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aSessionOpenedOnAIsUsableOnBAndEndsEverywhereOnSignOutThere() throws Exception {
    HttpResponse<String> in =
        send(a, "POST", "{\"key\": \"" + key + "\"}", "Content-Type", "application/json");
    assertThat(in.statusCode()).as(in.body()).isEqualTo(201);
    String cookie = in.headers().firstValue("Set-Cookie").orElseThrow().split(";", 2)[0];
    String csrf = JSON.readTree(in.body()).get("csrf").asText();

    HttpResponse<String> onB = send(b, "GET", "", "Cookie", cookie);
    assertThat(onB.statusCode()).isEqualTo(200);
    JsonNode who = JSON.readTree(onB.body());
    assertThat(who.get("tenant").asText()).isEqualTo("web");
    assertThat(who.get("csrf").asText()).isEqualTo(csrf);
    // The store holds the hash of the session id, never the cookie's value.
    String sessionId = cookie.substring(cookie.indexOf('=') + 1);
    assertThat(storedHashes()).doesNotContain(sessionId).hasSize(1);

    assertThat(send(b, "DELETE", "", "Cookie", cookie).statusCode()).isEqualTo(403);
    assertThat(send(b, "DELETE", "", "Cookie", cookie, "X-CSRF-Token", csrf).statusCode())
        .isEqualTo(204);
    assertThat(send(a, "GET", "", "Cookie", cookie).statusCode()).isEqualTo(401);
    assertThat(storedHashes()).isEmpty();
  }

  @Test
  void revokingTheKeyOnOneServerEndsItsSessionOnTheOther() throws Exception {
    HttpResponse<String> in =
        send(b, "POST", "{\"key\": \"" + key + "\"}", "Content-Type", "application/json");
    String cookie = in.headers().firstValue("Set-Cookie").orElseThrow().split(";", 2)[0];
    assertThat(send(a, "GET", "", "Cookie", cookie).statusCode()).isEqualTo(200);
    assertThat(b.store.revoke(TenantStore.keyId(key))).isTrue();
    assertThat(send(a, "GET", "", "Cookie", cookie).statusCode()).isEqualTo(401);
    assertThat(send(b, "GET", "", "Cookie", cookie).statusCode()).isEqualTo(401);
  }

  @Test
  void aForgedOrHostileCookieFindsNoSession() throws Exception {
    for (String forged :
        new String[] {"x'; DROP TABLE console_sessions; --", "%00", "0".repeat(64), "a b"}) {
      assertThat(send(a, "GET", "", "Cookie", "agentnest_console=" + forged).statusCode())
          .as(forged)
          .isEqualTo(401);
    }
    assertThat(storedHashes()).isEmpty();
  }

  private List<String> storedHashes() throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = pg.connect();
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT id_hash FROM console_sessions")) {
      while (r.next()) {
        out.add(r.getString(1));
      }
    }
    return out;
  }
}
