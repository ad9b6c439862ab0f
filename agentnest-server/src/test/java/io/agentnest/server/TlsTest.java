package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.TenantStore;
import io.agentnest.testing.TestKeyStores;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS from a configured key store: the server speaks HTTPS with the store's certificate, the
 * password comes from the named environment variable, and a missing one is a clear error.
 */
class TlsTest {
  static final String PASSWORD = "changeit-test";

  static Path keystore(Path dir) throws Exception {
    return TestKeyStores.selfSigned(dir, PASSWORD);
  }

  static ServerConfig config(Path ks) {
    return ServerConfig.parse(
        "listen: {host: 127.0.0.1, port: 0}\ntls: {keystore: '" + ks + "', password_env: TLS_PW}\n",
        "server.yaml");
  }

  static AgentNestServer server(ServerConfig c, TenantStore store, Map<String, String> env) {
    return new AgentNestServer(
        c,
        store,
        sc -> {
          throw new IllegalStateException("no sandbox is made in this test");
        },
        List::of,
        Clock.systemUTC(),
        env);
  }

  @Test
  void theServerSpeaksHttpsWithTheConfiguredKeyStore(@TempDir Path dir) throws Exception {
    Path ks = keystore(dir);
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server = server(config(ks), store, Map.of("TLS_PW", PASSWORD))) {
      int port = server.start();
      assertThat(server.tls()).isTrue();
      KeyStore trust = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(ks)) {
        trust.load(in, PASSWORD.toCharArray());
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SSLContext ssl = SSLContext.getInstance("TLS");
      ssl.init(null, tmf.getTrustManagers(), null);
      HttpClient https =
          HttpClient.newBuilder().sslContext(ssl).connectTimeout(Duration.ofSeconds(10)).build();
      HttpResponse<String> r =
          https.send(
              HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + "/v1/health"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("ok");
      // Plain HTTP to the TLS port gets no API answer.
      HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
      assertThatThrownBy(
              () -> {
                HttpResponse<String> p =
                    plain.send(
                        HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + port + "/v1/health"))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                        HttpResponse.BodyHandlers.ofString());
                if (p.statusCode() != 200) {
                  throw new IOException("refused with " + p.statusCode());
                }
              })
          .isInstanceOf(IOException.class);
    }
  }

  @Test
  void aMissingPasswordVariableOrKeyStoreIsNamed(@TempDir Path dir) throws Exception {
    Path ks = keystore(dir);
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC())) {
      try (AgentNestServer server = server(config(ks), store, Map.of())) {
        assertThatThrownBy(server::start).hasStackTraceContaining("TLS_PW");
      }
      try (AgentNestServer server =
          server(config(dir.resolve("missing.p12")), store, Map.of("TLS_PW", PASSWORD))) {
        assertThatThrownBy(server::start).hasStackTraceContaining("missing.p12");
      }
    }
  }
}
