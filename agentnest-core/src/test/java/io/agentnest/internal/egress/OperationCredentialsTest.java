package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A host operation's credentials (git's) added by the real proxy on loopback: to the operation's
 * remote only (scheme, host and port), only while its grant is open, replacing whatever the sandbox
 * sent, and masked in what a reflecting server sends back. The client is the sandbox: it never
 * holds the secret, so nothing in the sandbox can hand it on.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OperationCredentialsTest {
  private static final String TOKEN = "gitop4c1f9e2b7a05d3c8e6f1a2b9d";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final List<String> audit = new CopyOnWriteArrayList<>();
  private final List<String> plainSeen = new CopyOnWriteArrayList<>();
  private LoopbackHttpsOrigin https;
  private HttpServer plain;
  private HttpServer plainOther;
  private EgressProxy proxy;
  private LoopbackProxyServer server;

  @BeforeEach
  void start() throws IOException {
    https = track(new LoopbackHttpsOrigin("git.test", "git.test", TOKEN));
    plain = echoServer("plain");
    plainOther = echoServer("other-port");
    NetworkPolicy policy =
        NetworkPolicy.allow(
                "git.test:" + https.port(),
                "git.test:" + plain.getAddress().getPort(),
                "git.test:" + plainOther.getAddress().getPort(),
                "other.test:" + plain.getAddress().getPort())
            .allowAddress("127.0.0.0/8")
            .build();
    StaticResolver resolver =
        StaticResolver.of("git.test", "127.0.0.1").with("other.test", "127.0.0.1");
    proxy = new EgressProxy(policy, resolver, e -> {}, null, "sb-op", null, recordingAudit());
    server = track(new LoopbackProxyServer(proxy));
  }

  @AfterEach
  void stop() throws Exception {
    UpstreamTrust.replaceForTests(null);
    plain.stop(0);
    plainOther.stop(0);
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  @Test
  void httpsToTheOperationsRemoteCarriesTheCredentialOnlyWhileTheGrantIsOpen() throws Exception {
    String url = "https://git.test:" + https.port() + "/whoami";
    UpstreamTrust.replaceForTests(https.trustingContext());
    OperationCredentials.Grant grant =
        proxy
            .operations()
            .open(
                "https",
                "git.test",
                https.port(),
                Header.bearer(Secret.named("GIT_TOKEN", TOKEN)),
                Duration.ofMinutes(5));
    SSLContext operationCa = LoopbackHttpsOrigin.trusting(certificate(grant.caPem()));
    assertThat(grant.caPem()).startsWith("-----BEGIN CERTIFICATE-----").doesNotContain(TOKEN);

    HttpResponse<String> r = get(client(operationCa), url, null);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(https.nextRequestHeaders(WAIT).get("Authorization"))
        .containsExactly("Bearer " + TOKEN);
    // A server that reflects the request hands the sandbox a mask, not the token.
    HttpResponse<String> echo =
        get(client(operationCa), "https://git.test:" + https.port() + "/echo", null);
    assertThat(echo.body()).doesNotContain(TOKEN).contains("*".repeat(TOKEN.length()));
    assertThat(https.nextRequestHeaders(WAIT)).containsKey("Authorization");
    assertThat(audit).contains("used GIT_TOKEN INJECTED git.test GET /whoami 200");

    grant.close();
    // The same request after the operation: an opaque tunnel to the real server, no credential.
    HttpResponse<String> after = get(client(https.trustingContext()), url, null);
    assertThat(after.statusCode()).isEqualTo(401);
    assertThat(https.nextRequestHeaders(WAIT)).doesNotContainKey("Authorization");
  }

  @Test
  void aConnectionKeptAliveFromTheOperationGetsNoCredentialAfterIt() throws Exception {
    String url = "https://git.test:" + https.port() + "/whoami";
    UpstreamTrust.replaceForTests(https.trustingContext());
    OperationCredentials.Grant grant =
        proxy
            .operations()
            .open(
                "https",
                "git.test",
                https.port(),
                Header.bearer(Secret.named("GIT_TOKEN", TOKEN)),
                Duration.ofMinutes(5));
    // Sandbox code opens its own tunnel during the operation and keeps it alive.
    HttpClient kept = client(LoopbackHttpsOrigin.trusting(certificate(grant.caPem())));
    assertThat(get(kept, url, null).statusCode()).isEqualTo(200);
    assertThat(https.nextRequestHeaders(WAIT)).containsKey("Authorization");

    grant.close();
    // The same connection after the operation: ended by the proxy, not answered with the
    // credential (the client's retry opens an opaque tunnel, whose server it does not trust).
    Throwable failed =
        catchThrowable(() -> assertThat(get(kept, url, null).statusCode()).isNotEqualTo(200));
    assertThat(failed == null || failed instanceof IOException).as("%s", failed).isTrue();
    Map<String, List<String>> later = https.nextRequestHeaders(Duration.ofMillis(500));
    assertThat(later == null ? Map.of() : later).doesNotContainKey("Authorization");
  }

  @Test
  void plainHttpGetsTheCredentialForTheGrantsHostAndPortOnlyAndNeverTheSandboxsOwn()
      throws Exception {
    int port = plain.getAddress().getPort();
    HttpClient c = client(SSLContext.getDefault());
    try (OperationCredentials.Grant grant =
        proxy
            .operations()
            .open(
                "http",
                "git.test",
                port,
                Header.of("Authorization", "Basic ", Secret.named("GIT_TOKEN", TOKEN), ""),
                Duration.ofMinutes(5))) {
      assertThat(grant.caPem()).isEmpty();
      HttpResponse<String> r = get(c, "http://git.test:" + port + "/app.git", "Basic forged");
      assertThat(plainSeen).containsExactly("plain Basic " + TOKEN);
      // The echoed header comes back masked.
      assertThat(r.body()).doesNotContain(TOKEN).contains("Basic " + "*".repeat(TOKEN.length()));

      plainSeen.clear();
      get(c, "http://other.test:" + port + "/app.git", null);
      get(c, "http://git.test:" + plainOther.getAddress().getPort() + "/app.git", null);
      assertThat(plainSeen).containsExactlyInAnyOrder("plain -", "other-port -");
    }
    plainSeen.clear();
    get(c, "http://git.test:" + port + "/app.git", null);
    assertThat(plainSeen).containsExactly("plain -");
    assertThat(audit).noneMatch(line -> line.contains(TOKEN));
  }

  @Test
  void oneGrantPerRemoteAtATimeAndOnlyForHttpOrHttps() {
    Header h = Header.bearer(Secret.of(TOKEN));
    int port = plain.getAddress().getPort();
    try (OperationCredentials.Grant g =
        proxy.operations().open("http", "git.test", port, h, Duration.ofMinutes(1))) {
      assertThatThrownBy(
              () -> proxy.operations().open("http", "git.test", port, h, Duration.ofMinutes(1)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("another operation");
      assertThat(g.toString()).doesNotContain(TOKEN);
    }
    assertThatThrownBy(
            () -> proxy.operations().open("ftp", "git.test", port, h, Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class);
    // Closed: the remote can be granted again.
    proxy.operations().open("http", "git.test", port, h, Duration.ofMinutes(1)).close();
  }

  /** A plain HTTP server that records the Authorization it got and echoes it in its body. */
  private HttpServer echoServer(String name) throws IOException {
    HttpServer s =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
    s.createContext(
        "/",
        (HttpExchange x) -> {
          String auth = x.getRequestHeaders().getFirst("Authorization");
          plainSeen.add(name + " " + (auth == null ? "-" : auth));
          byte[] body = ("you sent: " + auth + "\n").getBytes(StandardCharsets.ISO_8859_1);
          x.sendResponseHeaders(200, body.length);
          x.getResponseBody().write(body);
          x.close();
        });
    s.start();
    return s;
  }

  private CredentialAudit recordingAudit() {
    return new CredentialAudit() {
      @Override
      public void used(
          String secretName, Kind kind, String host, String method, String path, int status) {
        audit.add(
            "used "
                + secretName
                + " "
                + kind
                + " "
                + host
                + " "
                + method
                + " "
                + path
                + " "
                + status);
      }

      @Override
      public void usedAgain(
          String secretName,
          Kind kind,
          String host,
          long repeated,
          Map<Integer, Long> statuses,
          String lastMethod,
          String lastPath) {
        audit.add("used again " + secretName + " " + kind + " " + host + " x" + repeated);
      }

      @Override
      public void leakAttempt(
          String secretName, String ownerHost, String host, String method, String path) {}

      @Override
      public void requestDenied(
          String host, String method, String path, String rule, String reason) {}
    };
  }

  private static X509Certificate certificate(String pem) throws Exception {
    return (X509Certificate)
        CertificateFactory.getInstance("X.509")
            .generateCertificate(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)));
  }

  private HttpClient client(SSLContext trust) {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", server.port())))
        .sslContext(trust)
        .connectTimeout(WAIT)
        .build();
  }

  private static HttpResponse<String> get(HttpClient c, String url, @Nullable String authorization)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(WAIT);
    if (authorization != null) {
      b.header("Authorization", authorization);
    }
    return c.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }
}
