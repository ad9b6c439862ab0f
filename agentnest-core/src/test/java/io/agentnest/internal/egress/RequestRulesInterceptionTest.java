package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Header;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.RequestRule;
import io.agentnest.Secret;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Request rules on an intercepted host, through the real proxy on loopback sockets: requests are
 * written byte for byte on a TLS connection that trusts the sandbox CA, as hostile code would send
 * them (no client library normalises the path first).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RequestRulesInterceptionTest {
  private static final String TOKEN = "ghp_rulesTestTokenNeverInTheSandbox0123";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final List<String> denied = new CopyOnWriteArrayList<>();
  private final List<String> used = new CopyOnWriteArrayList<>();
  private final List<NetworkEvent> events = new CopyOnWriteArrayList<>();
  private LoopbackHttpsOrigin api;
  private Interception interception;
  private LoopbackProxyServer proxy;

  @BeforeEach
  void start() throws IOException {
    api = track(new LoopbackHttpsOrigin("api.test", "api.test", TOKEN));
    NetworkPolicy policy =
        NetworkPolicy.allow("api.test:" + api.port())
            .allowAddress("127.0.0.0/8")
            .inject("api.test", Header.bearer(Secret.named("GITHUB_TOKEN", TOKEN)))
            .restrict(
                "api.test",
                RequestRule.of("/whoami", "GET"),
                RequestRule.of("/echo/", "GET", "HEAD"),
                RequestRule.of("/upload", "POST"))
            .build();
    UpstreamTrust.replaceForTests(LoopbackHttpsOrigin.trusting(api.caCertificate()));
    try {
      interception = Interception.forPolicy(policy, "test", Duration.ofHours(1)).orElseThrow();
    } finally {
      UpstreamTrust.replaceForTests(null);
    }
    EgressProxy p =
        new EgressProxy(
            policy,
            StaticResolver.of("api.test", "127.0.0.1"),
            events::add,
            null,
            "sb-rules",
            interception,
            audit());
    proxy = track(new LoopbackProxyServer(p));
  }

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  @Test
  void aRequestInsideTheRulesIsForwardedWithItsCredential() throws Exception {
    String r =
        exchange(
            "GET /whoami HTTP/1.1\r\nHost: api.test:"
                + api.port()
                + "\r\nConnection: close\r\n\r\n");

    assertThat(r).startsWith("HTTP/1.1 200").contains("authenticated caller");
    assertThat(api.nextRequestHeaders(WAIT).get("Authorization"))
        .containsExactly("Bearer " + TOKEN);
    assertThat(denied).isEmpty();
  }

  @Test
  void aMethodOutsideTheRulesGets403IsAuditedAndNeverReachesTheHost() throws Exception {
    String r =
        exchange(
            "DELETE /whoami HTTP/1.1\r\nHost: api.test:"
                + api.port()
                + "\r\nContent-Length: 0\r\n\r\n");

    assertThat(r).startsWith("HTTP/1.1 403").contains("outside the request rules of api.test");
    assertThat(denied).containsExactly("api.test DELETE /whoami request-rules");
    assertThat(used).isEmpty();
    assertThat(api.nextRequestHeaders(Duration.ofMillis(300))).isNull();
  }

  @Test
  void aPathOutsideTheRulesGets403AndKeepAliveDoesNotSmuggleASecondRequest() throws Exception {
    // The refused request's body holds a second request: the connection ends instead.
    String smuggled = "GET /whoami HTTP/1.1\r\nHost: api.test:" + api.port() + "\r\n\r\n";
    String r =
        exchange(
            "POST /admin HTTP/1.1\r\nHost: api.test:"
                + api.port()
                + "\r\nContent-Length: "
                + smuggled.length()
                + "\r\n\r\n"
                + smuggled);

    assertThat(r).startsWith("HTTP/1.1 403").doesNotContain("authenticated caller");
    assertThat(denied).containsExactly("api.test POST /admin request-rules");
    assertThat(api.nextRequestHeaders(Duration.ofMillis(300))).isNull();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/echo/../admin",
        "/echo/%2e%2e/admin",
        "/echo/%2E%2e/admin",
        "/echo/..%2fadmin",
        "/echo/..;/admin",
        "/echo/..\\admin",
        "/echo//admin",
        "/echo/%c0%ae%c0%ae/admin",
        "/echo/%252e%252e/admin",
        "https://api.test/echo/../admin",
      })
  void traversalAttemptsAreRefusedAsAmbiguousAndNeverForwarded(String target) throws Exception {
    String t = target.replace("https://api.test/", "https://api.test:" + api.port() + "/");
    String r = exchange("GET " + t + " HTTP/1.1\r\nHost: api.test:" + api.port() + "\r\n\r\n");

    assertThat(r).startsWith("HTTP/1.1 400").contains("ambiguous");
    assertThat(denied).singleElement().asString().endsWith("ambiguous-path");
    assertThat(used).isEmpty();
    assertThat(api.nextRequestHeaders(Duration.ofMillis(300))).isNull();
  }

  @Test
  void allowedRequestsKeepTheConnectionAlive() throws Exception {
    String host = "Host: api.test:" + api.port() + "\r\n";
    try (SSLSocket s = tunnel()) {
      OutputStream out = s.getOutputStream();
      out.write(
          ("GET /echo/a HTTP/1.1\r\n" + host + "\r\n" + "HEAD /echo/b HTTP/1.1\r\n" + host + "\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.write(
          ("POST /upload HTTP/1.1\r\n" + host + "Content-Length: 3\r\nConnection: close\r\n\r\nabc")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      String all = readAll(s.getInputStream());
      // /echo/a and /echo/b are allowed but unknown to the origin: two 404s, then the upload.
      assertThat(all.split("HTTP/1.1 ", -1)).hasSize(4);
      assertThat(all).contains("read 3 bytes");
    }
    assertThat(denied).isEmpty();
  }

  // ---------------------------------------------------------------------------------------------

  private String exchange(String request) throws IOException {
    try (SSLSocket s = tunnel()) {
      s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      return readAll(s.getInputStream());
    }
  }

  /** A TLS connection to api.test through the proxy's CONNECT, trusting the sandbox CA. */
  private SSLSocket tunnel() throws IOException {
    return TlsTunnels.open(
        proxy.port(), "api.test", api.port(), interception.ca().certificate(), WAIT);
  }

  /** Everything until the proxy closes (bounded). */
  private static String readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    while (out.size() < (1 << 20) && (n = in.read(buf)) >= 0) {
      out.write(buf, 0, n);
    }
    return out.toString(StandardCharsets.ISO_8859_1);
  }

  private CredentialAudit audit() {
    return new CredentialAudit() {
      @Override
      public void used(
          String secretName, Kind kind, String host, String method, String path, int status) {
        used.add(secretName + " " + host + " " + method + " " + path);
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
        used.add(secretName + " " + host + " again " + repeated);
      }

      @Override
      public void leakAttempt(
          String secretName, String ownerHost, String host, String method, String path) {}

      @Override
      public void requestDenied(
          String host, String method, String path, String rule, String reason) {
        denied.add(host + " " + method + " " + path + " " + rule);
      }
    };
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }
}
