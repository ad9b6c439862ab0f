package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.Route;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/openapi.yaml is the contract: its operations are exactly the routes the server serves. */
class OpenApiContractTest {
  static final Path DOC = Path.of("..", "docs", "openapi.yaml");
  static final Set<String> METHODS = Set.of("get", "post", "put", "delete", "patch");

  static JsonNode doc() throws Exception {
    return new ObjectMapper(new YAMLFactory()).readTree(Files.readString(DOC));
  }

  static Set<String> documented() throws Exception {
    Set<String> ops = new TreeSet<>();
    Iterator<Map.Entry<String, JsonNode>> paths = doc().get("paths").fields();
    while (paths.hasNext()) {
      Map.Entry<String, JsonNode> p = paths.next();
      p.getValue()
          .fieldNames()
          .forEachRemaining(
              m -> {
                if (METHODS.contains(m)) {
                  ops.add(m + " " + p.getKey());
                }
              });
    }
    return ops;
  }

  @Test
  void theDocumentIsOpenApi31AndNamesExactlyTheServersRoutes() throws Exception {
    assertThat(doc().get("openapi").asText()).startsWith("3.1");
    Set<String> served = new TreeSet<>();
    Route.ALL.forEach(r -> served.add(r.key()));
    assertThat(documented()).isEqualTo(served);
  }

  @Test
  void everyDocumentedOperationIsRegisteredOnTheRunningServer(@TempDir Path dir) throws Exception {
    Function<SandboxConfig, Sandbox> never =
        c -> {
          throw new IllegalStateException("no sandbox is made in this test");
        };
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            new AgentNestServer(
                ServerConfig.defaults().withListen("127.0.0.1", 0),
                store,
                never,
                List::of,
                Clock.systemUTC(),
                Map.of())) {
      String key = store.add(new Tenant("probe", 1, 1L << 30, 1, 1000, null, null), null);
      Http http = new Http(server.start());
      for (Route r : Route.ALL) {
        String path =
            r.path()
                .replace("{id}", "sb-1")
                .replace("{name}", "snap-1")
                .replace("{execution}", "x-1");
        // With a key every route reaches its handler: whatever it answers, it is not the router's
        // "no such route" (404) or "method not allowed" (405).
        Http.Reply keyed = http.send(r.method(), path, key, new byte[0], "");
        assertThat(keyed.status()).as(r.key()).isNotEqualTo(405);
        assertThat(keyed.text()).as(r.key()).doesNotContain("no such route");
      }
      // Without a key a registered authenticated route asks for one. Each probe is a refused
      // authentication: they stay within one second's failed-auth bucket.
      for (Route r :
          Route.ALL.subList(0, Math.min(Route.ALL.size(), AuthFailures.PER_ADDRESS - 1))) {
        String path =
            r.path()
                .replace("{id}", "sb-1")
                .replace("{name}", "snap-1")
                .replace("{execution}", "x-1");
        Http.Reply reply = http.send(r.method(), path, null, new byte[0], "");
        assertThat(reply.status()).as(r.key()).isEqualTo(r.authenticated() ? 401 : 200);
      }
      assertThat(http.get("/v1/undocumented", null).status()).isEqualTo(404);
    }
  }

  @Test
  void anAddressThatKeepsFailingAuthenticationIsSlowedDown(@TempDir Path dir) throws Exception {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            new AgentNestServer(
                ServerConfig.defaults().withListen("127.0.0.1", 0),
                store,
                c -> {
                  throw new IllegalStateException("no sandbox is made in this test");
                },
                List::of,
                Clock.systemUTC(),
                Map.of())) {
      Http http = new Http(server.start());
      Http.Reply limited = null;
      for (int i = 0; i < 4 * AuthFailures.PER_ADDRESS && limited == null; i++) {
        // A new key id each time: the per-key-id bound (AuthFailures) is not what answers here.
        Http.Reply r = http.get("/v1/sandboxes", String.format("ank_%016x_", i) + "B".repeat(43));
        limited = r.status() == 429 ? r : null;
      }
      assertThat(limited).isNotNull();
      assertThat(limited.json().at("/error/quota").asText()).isEqualTo("failed_authentications");
    }
  }

  @Test
  void aKeyIsRequiredEverywhereButHealth() throws Exception {
    JsonNode d = doc();
    assertThat(d.at("/components/securitySchemes/bearer/scheme").asText()).isEqualTo("bearer");
    assertThat(d.at("/paths/~1v1~1health/get/security").isArray()).isTrue();
    Route.ALL.stream()
        .filter(r -> !r.authenticated())
        .forEach(r -> assertThat(r.path()).isEqualTo("/v1/health"));
  }
}
