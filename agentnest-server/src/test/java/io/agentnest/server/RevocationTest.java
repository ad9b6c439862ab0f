package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.server.e2b.E2bEnvd;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.Tenant;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Revocation revokes: what a key was exchanged for (a console session, E2B sandbox access tokens)
 * ends with the key. The attack: sign in (or create through E2B) with a key, have the operator run
 * `agentnest tenant revoke`, and keep using the session or the tokens.
 */
class RevocationTest {
  @TempDir Path dir;
  FakeSandboxes running;
  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeEach
  void start() {
    running = new FakeSandboxes(dir, "");
  }

  @AfterEach
  void stop() {
    running.close();
  }

  private HttpRequest.Builder req(String path) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + running.port + path))
        .timeout(Duration.ofSeconds(30));
  }

  private HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aConsoleSessionCannotCreateOrExecAfterItsKeyIsRevoked() throws Exception {
    String key = running.store.add(new Tenant("alpha", 5, 4L << 30, 4, 100, null, null), null);
    HttpResponse<String> signIn =
        send(
            req("/console/session")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + key + "\"}")));
    assertThat(signIn.statusCode()).as(signIn.body()).isEqualTo(201);
    String setCookie = signIn.headers().firstValue("Set-Cookie").orElseThrow();
    String cookie = setCookie.substring(0, setCookie.indexOf(';'));
    String csrf = Wire.JSON.readTree(signIn.body()).get("csrf").asText();

    HttpResponse<String> made =
        send(
            req("/v1/sandboxes")
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")));
    assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
    String id = Wire.JSON.readTree(made.body()).get("id").asText();

    assertThat(running.store.revoke(key)).isTrue();

    HttpResponse<String> again =
        send(
            req("/v1/sandboxes")
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")));
    assertThat(again.statusCode()).as(again.body()).isEqualTo(401);
    HttpResponse<String> exec =
        send(
            req("/v1/sandboxes/" + id + "/exec")
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"id\"}")));
    assertThat(exec.statusCode()).as(exec.body()).isEqualTo(401);
    assertThat(running.created).hasSize(1);
    assertThat(send(req("/console/session").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(401);
  }

  @Test
  void anE2bAccessTokenStopsAtTheNextEnvdCallAfterItsKeyIsRevoked() throws Exception {
    String key = running.store.add(new Tenant("alpha", 5, 4L << 30, 4, 100, null, null), null);
    String other = running.store.issueKey("alpha", null);
    JsonNode sb = e2bCreate(key);
    String id = sb.get("sandboxID").asText();
    String token = sb.get("envdAccessToken").asText();
    assertThat(health(id, token).statusCode()).isEqualTo(204);

    assertThat(running.store.revoke(key)).isTrue();

    HttpResponse<String> refused = health(id, token);
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(401);
    assertThat(refused.body()).contains("revoked");

    // Another active key of the tenant connects: new tokens, and the revoked holder's stay dead.
    HttpResponse<String> connected =
        send(
            req("/e2b/sandboxes/" + id + "/connect")
                .header("X-API-KEY", other)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")));
    assertThat(connected.statusCode()).as(connected.body()).isEqualTo(200);
    String fresh = Wire.JSON.readTree(connected.body()).get("envdAccessToken").asText();
    assertThat(fresh).isNotEqualTo(token);
    assertThat(health(id, fresh).statusCode()).isEqualTo(204);
    assertThat(health(id, token).statusCode()).isEqualTo(401);
  }

  private JsonNode e2bCreate(String key) throws Exception {
    HttpResponse<String> r =
        send(
            req("/e2b/sandboxes")
                .header("X-API-KEY", key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\": \"base\"}")));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return Wire.JSON.readTree(r.body());
  }

  private HttpResponse<String> health(String id, String token) throws Exception {
    return send(
        req("/e2b/sandbox/health")
            .header("E2b-Sandbox-Id", id)
            .header("E2b-Sandbox-Port", Integer.toString(E2bEnvd.ENVD_PORT))
            .header("X-Access-Token", token)
            .GET());
  }
}
