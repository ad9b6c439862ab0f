package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 42, LOW 13 (login CSRF): another site's page posted a form to {@code /console/session} with
 * the attacker's tenant key, and the operator's browser was signed in to that tenant. The requests
 * below are what such a page makes the browser send.
 */
class SignInCsrfTest {
  @TempDir Path dir;
  TenantStore store;
  AgentNestServer server;
  String key;
  String base;
  final HttpClient client = HttpClient.newHttpClient();

  @BeforeEach
  void start() {
    store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
    server =
        new AgentNestServer(
            ServerConfig.parse("listen: {host: 127.0.0.1, port: 0}\n", "test"),
            store,
            sc -> {
              throw new IllegalStateException("no sandbox is made in this test");
            },
            List::of,
            Clock.systemUTC(),
            Map.of());
    key = store.add(new Tenant("attacker", 2, 1L << 30, 1, 100, null, null), null);
    base = "http://127.0.0.1:" + server.start();
  }

  @AfterEach
  void stop() {
    server.close();
    store.close();
  }

  HttpResponse<String> signIn(String body, Map<String, String> headers) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(base + "/console/session"))
            .timeout(Duration.ofSeconds(30))
            .POST(HttpRequest.BodyPublishers.ofString(body));
    headers.forEach(b::header);
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aCrossSiteTextPlainFormDoesNotSignTheBrowserIn() throws Exception {
    // <form enctype="text/plain"> with an input named {"key":"ank_..." and value "} sends this.
    HttpResponse<String> r =
        signIn(
            "{\"key\":\"" + key + "\",\"x\":\"=\"}",
            Map.of("Content-Type", "text/plain", "Origin", "https://attacker.example"));
    assertThat(r.statusCode()).as(r.body()).isIn(403, 415);
    assertThat(r.headers().firstValue("Set-Cookie")).isEmpty();
    // Without Origin or Fetch metadata (an old browser) the type alone refuses it.
    HttpResponse<String> bare =
        signIn("{\"key\":\"" + key + "\"}", Map.of("Content-Type", "text/plain"));
    assertThat(bare.statusCode()).as(bare.body()).isEqualTo(415);
    assertThat(bare.body()).contains("application/json", "unsupported_media_type");
    assertThat(bare.headers().firstValue("Set-Cookie")).isEmpty();
  }

  @Test
  void aCrossSiteUrlEncodedFormDoesNotSignTheBrowserIn() throws Exception {
    HttpResponse<String> r =
        signIn(
            "key=" + key,
            Map.of(
                "Content-Type", "application/x-www-form-urlencoded",
                "Origin", "https://attacker.example",
                "Sec-Fetch-Site", "cross-site"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
    assertThat(r.body()).contains("csrf", "another site");
    assertThat(r.headers().firstValue("Set-Cookie")).isEmpty();
    HttpResponse<String> bare =
        signIn("key=" + key, Map.of("Content-Type", "application/x-www-form-urlencoded"));
    assertThat(bare.statusCode()).as(bare.body()).isEqualTo(415);
  }

  @Test
  void aCrossSiteJsonFetchIsRefusedByItsFetchMetadataAndOrigin() throws Exception {
    String body = "{\"key\":\"" + key + "\"}";
    HttpResponse<String> site =
        signIn(body, Map.of("Content-Type", "application/json", "Sec-Fetch-Site", "same-site"));
    assertThat(site.statusCode()).as(site.body()).isEqualTo(403);
    HttpResponse<String> origin =
        signIn(
            body, Map.of("Content-Type", "application/json", "Origin", "http://127.0.0.1.example"));
    assertThat(origin.statusCode()).as(origin.body()).isEqualTo(403);
    assertThat(origin.headers().firstValue("Set-Cookie")).isEmpty();
  }

  @Test
  void theConsolePagesOwnSignInStillWorks() throws Exception {
    HttpResponse<String> r =
        signIn(
            "{\"key\":\"" + key + "\"}",
            Map.of(
                "Content-Type", "application/json; charset=utf-8",
                "Origin", base,
                "Sec-Fetch-Site", "same-origin"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    assertThat(r.headers().firstValue("Set-Cookie")).isPresent();
  }

  @Test
  void aSignInBodyLargerThanAKeyNeedsIsRefusedUnread() throws Exception {
    HttpResponse<String> r =
        signIn(
            "{\"key\":\"" + "A".repeat(8_000) + "\"}", Map.of("Content-Type", "application/json"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(413);
    assertThat(r.body()).contains("4096");
  }
}
