package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server-wide audit routes are the operator's. The attack: a tenant key (or a tenant's console
 * session) runs {@code /v1/audit/verify} over the whole server chain, whose cost grows with every
 * tenant's history and whose counts move with other tenants' activity, and reads {@code
 * /v1/audit/shipping}'s server-wide counters. Both are 403 naming the admin console; the admin
 * console still reads both.
 */
class AuditAccessTest {
  @TempDir Path dir;

  @Test
  void aTenantCannotVerifyTheWholeChainOrReadShippingCounters() {
    try (FakeSandboxes running = new FakeSandboxes(dir, "")) {
      String key = running.store.add(new Tenant("alpha", 2, 2L << 30, 2, 1000, null, null), null);
      Http http = running.http();
      for (String route : new String[] {"/v1/audit/verify", "/v1/audit/shipping"}) {
        Http.Reply byKey = http.get(route, key);
        assertThat(byKey.status()).as(route + ": " + byKey.text()).isEqualTo(403);
        assertThat(byKey.text()).contains("admin key").doesNotContain("checked");
        assertThat(session(http, key, route).status()).as(route).isEqualTo(403);
        Http.Reply admin = asAdmin(http, running.store, route);
        assertThat(admin.status()).as(route + ": " + admin.text()).isEqualTo(200);
      }
      assertThat(asAdmin(http, running.store, "/v1/audit/verify").json().has("ok")).isTrue();
      // The tenant's own records stay its to read.
      assertThat(http.get("/v1/audit", key).status()).isEqualTo(200);
    }
  }

  /** GET {@code path} in a console session signed in with a new admin key of {@code store}. */
  static Http.Reply asAdmin(Http http, TenantStore store, String path) {
    return session(http, store.issueAdminKey(), path);
  }

  /** GET {@code path} in a console session signed in with {@code key}. */
  static Http.Reply session(Http http, String key, String path) {
    try {
      HttpResponse<String> signIn =
          http.client.send(
              HttpRequest.newBuilder(URI.create(http.base + "/console/session"))
                  .timeout(Duration.ofSeconds(30))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + key + "\"}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(signIn.statusCode()).as(signIn.body()).isEqualTo(201);
      String setCookie = signIn.headers().firstValue("Set-Cookie").orElseThrow();
      HttpResponse<byte[]> r =
          http.client.send(
              HttpRequest.newBuilder(URI.create(http.base + path))
                  .timeout(Duration.ofSeconds(60))
                  .header("Cookie", setCookie.substring(0, setCookie.indexOf(';')))
                  .GET()
                  .build(),
              HttpResponse.BodyHandlers.ofByteArray());
      return new Http.Reply(r.statusCode(), r.body(), r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
