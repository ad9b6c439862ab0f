package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Header;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkEvent.Decision;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Credential injection through the real proxy on loopback sockets, against real HTTPS servers with
 * a test CA of their own, and a real TLS client (the JDK's HttpClient) that trusts the sandbox CA.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CredentialInterceptionTest {
  private static final String TOKEN = "ghp_realTokenNeverInTheSandbox0123456789";
  private static final String OTHER_TOKEN = "other-secret-value-0123456789";
  private static final String API_KEY = "sk-placeholder-backed-secret-987654321";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
  private final List<String> audit = new CopyOnWriteArrayList<>();
  private LoopbackHttpsOrigin api;
  private LoopbackHttpsOrigin other;
  private LoopbackHttpsOrigin wrongName;
  private Interception interception;
  private LoopbackProxyServer proxy;

  @BeforeEach
  void start() throws IOException {
    api = track(new LoopbackHttpsOrigin("api.test", "api.test", TOKEN));
    other = track(new LoopbackHttpsOrigin("other.test", "other.test", null));
    wrongName = track(new LoopbackHttpsOrigin("bad.test", "somebody-else.test", null));
    NetworkPolicy policy =
        NetworkPolicy.allow(
                "api.test:" + api.port(),
                "other.test:" + other.port(),
                "bad.test:" + wrongName.port())
            .allowAddress("127.0.0.0/8")
            .inject("api.test", Header.bearer(Secret.named("GITHUB_TOKEN", TOKEN)))
            .placeholder("api.test", "API_KEY", Secret.of(API_KEY))
            .inject("other.test", Header.of("X-Other", "", Secret.of(OTHER_TOKEN), ""))
            .inject("bad.test", Header.bearer(Secret.of(OTHER_TOKEN)))
            .build();
    UpstreamTrust.replaceForTests(
        LoopbackHttpsOrigin.trusting(
            api.caCertificate(), other.caCertificate(), wrongName.caCertificate()));
    try {
      interception = Interception.forPolicy(policy, "test", Duration.ofHours(1)).orElseThrow();
    } finally {
      UpstreamTrust.replaceForTests(null);
    }
    StaticResolver resolver =
        StaticResolver.of("api.test", "127.0.0.1")
            .with("other.test", "127.0.0.1")
            .with("bad.test", "127.0.0.1");
    EgressProxy p =
        new EgressProxy(
            policy, resolver, events::add, null, "sb-cred", interception, recordingAudit());
    proxy = track(new LoopbackProxyServer(p));
  }

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
  }

  @Test
  void aRequestWithoutATokenArrivesAuthenticatedAndTheUseIsAuditedByName() throws Exception {
    HttpResponse<String> r = get(client(), "https://api.test:" + api.port() + "/whoami");

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("authenticated");
    assertThat(api.nextRequestHeaders(WAIT).get("Authorization"))
        .containsExactly("Bearer " + TOKEN);
    assertThat(audit)
        .contains("used GITHUB_TOKEN INJECTED api.test GET /whoami 200")
        .noneMatch(line -> line.contains(TOKEN));
  }

  @Test
  void theSandboxsOwnAuthorizationHeaderIsReplacedNotForwarded() throws Exception {
    HttpResponse<String> r =
        client()
            .send(
                request("https://api.test:" + api.port() + "/whoami")
                    .header("Authorization", "Bearer forged")
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(api.nextRequestHeaders(WAIT).get("Authorization"))
        .containsExactly("Bearer " + TOKEN);
  }

  @Test
  void aServerEchoingTheSecretHandsTheSandboxOnlyAMask() throws Exception {
    HttpResponse<String> r = get(client(), "https://api.test:" + api.port() + "/echo");

    assertThat(r.body()).doesNotContain(TOKEN).contains("Bearer " + "*".repeat(TOKEN.length()));
  }

  @Test
  void aPlaceholderIsSwappedInRequestsToItsOwnHost() throws Exception {
    String placeholder = interception.placeholderEnv().get("API_KEY");
    assertThat(placeholder).startsWith("agentnest-placeholder-").doesNotContain(API_KEY);

    HttpResponse<String> r =
        client()
            .send(
                request("https://api.test:" + api.port() + "/echo")
                    .header("X-Api-Key", placeholder)
                    .build(),
                HttpResponse.BodyHandlers.ofString());

    assertThat(api.nextRequestHeaders(WAIT).get("X-Api-Key")).containsExactly(API_KEY);
    assertThat(r.body()).doesNotContain(API_KEY);
    assertThat(audit).contains("used API_KEY PLACEHOLDER api.test GET /echo 200");
  }

  @Test
  void aPlaceholderSentToAnotherHostIsNotSwappedAndIsAuditedAsALeak() throws Exception {
    String placeholder = interception.placeholderEnv().get("API_KEY");

    client()
        .send(
            request("https://other.test:" + other.port() + "/echo?k=" + placeholder)
                .header("X-Api-Key", placeholder)
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(other.nextRequestHeaders(WAIT).get("X-Api-Key")).containsExactly(placeholder);
    assertThat(audit)
        .anyMatch(l -> l.startsWith("leak API_KEY api.test other.test GET /echo"))
        .noneMatch(l -> l.contains(API_KEY));
  }

  @Test
  void anUpstreamWhoseCertificateNamesAnotherHostIsRefused() throws Exception {
    HttpResponse<String> r = get(client(), "https://bad.test:" + wrongName.port() + "/whoami");

    assertThat(r.statusCode()).isEqualTo(502);
    assertThat(r.body()).contains("cannot verify bad.test");
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("upstream-tls");
    assertThat(wrongName.nextRequestHeaders(Duration.ofMillis(200))).isNull();
  }

  @Test
  void anUpstreamOutsideTheTrustStoreIsRefused() throws Exception {
    UpstreamTrust.replaceForTests(LoopbackHttpsOrigin.trusting(other.caCertificate()));
    Interception strict;
    try {
      strict =
          Interception.forPolicy(
                  NetworkPolicy.allow("api.test:" + api.port())
                      .allowAddress("127.0.0.0/8")
                      .inject("api.test", Header.bearer(Secret.of(TOKEN)))
                      .build(),
                  "strict",
                  Duration.ofHours(1))
              .orElseThrow();
    } finally {
      UpstreamTrust.replaceForTests(null);
    }
    EgressProxy p =
        new EgressProxy(
            NetworkPolicy.allow("api.test:" + api.port()).allowAddress("127.0.0.0/8").build(),
            StaticResolver.of("api.test", "127.0.0.1"),
            events::add,
            null,
            "sb-strict",
            strict,
            recordingAudit());
    LoopbackProxyServer s = track(new LoopbackProxyServer(p));
    HttpClient c = client(s.port(), LoopbackHttpsOrigin.trusting(strict.ca().certificate()));

    HttpResponse<String> r = get(c, "https://api.test:" + api.port() + "/whoami");

    assertThat(r.statusCode()).isEqualTo(502);
    assertThat(api.nextRequestHeaders(Duration.ofMillis(200))).isNull();
  }

  @Test
  void keepAliveAndChunkedBodiesWorkThroughOneInterceptedConnection() throws Exception {
    HttpClient c = client();
    String base = "https://api.test:" + api.port();
    for (int i = 0; i < 5; i++) {
      assertThat(get(c, base + "/whoami").statusCode()).isEqualTo(200);
    }
    HttpResponse<byte[]> chunked =
        c.send(
            request(base + "/chunked?n=3000000").build(), HttpResponse.BodyHandlers.ofByteArray());
    assertThat(chunked.body()).hasSize(3_000_000);
    byte[] upload = new byte[1_500_000];
    HttpResponse<String> posted =
        c.send(
            request(base + "/upload")
                .POST(
                    HttpRequest.BodyPublishers.ofInputStream(
                        () -> new ByteArrayInputStream(upload)))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(posted.body()).isEqualTo("read 1500000 bytes\n");

    // Seven requests on the one connection the client kept open: the first use is written at
    // once, the other six are counted until the connection ends (CredentialUseFoldingTest).
    assertThat(audit.stream().filter(l -> l.startsWith("used GITHUB_TOKEN"))).hasSize(1);
    assertThat(events).isEmpty();
  }

  @Test
  void aClientThatPinsTheRealCertificateFailsTheHandshakeAndTheEventSaysWhy() throws Exception {
    HttpClient pinning = client(proxy.port(), api.trustingContext());

    assertThatThrownBy(() -> get(pinning, "https://api.test:" + api.port() + "/whoami"))
        .isInstanceOf(SSLException.class);
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e.reason()).contains("refused the sandbox CA's certificate for api.test");
    assertThat(api.nextRequestHeaders(Duration.ofMillis(200))).isNull();
  }

  @Test
  void aTlsNameOtherThanTheConnectHostIsRefusedBeforeAnyInterception() throws Exception {
    try (Socket s = new Socket("127.0.0.1", proxy.port())) {
      OutputStream out = s.getOutputStream();
      out.write(
          ("CONNECT api.test:" + api.port() + " HTTP/1.1\r\nHost: api.test\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] head = new byte[39];
      int n = in.readNBytes(head, 0, head.length);
      assertThat(new String(head, 0, n, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 200");
      SSLSocket tls =
          (SSLSocket)
              LoopbackHttpsOrigin.trusting(interception.ca().certificate())
                  .getSocketFactory()
                  .createSocket(s, "other.test", api.port(), false);
      SSLParameters p = tls.getSSLParameters();
      p.setServerNames(List.of(new SNIHostName("other.test")));
      tls.setSSLParameters(p);
      assertThatThrownBy(tls::startHandshake).isInstanceOf(SSLException.class);
    }
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).contains("sni");
    assertThat(api.nextRequestHeaders(Duration.ofMillis(200))).isNull();
  }

  @Test
  void hostsWithoutCredentialRulesStayOpaqueTunnels() throws Exception {
    NetworkPolicy policy =
        NetworkPolicy.allow("api.test:" + api.port(), "other.test:" + other.port())
            .allowAddress("127.0.0.0/8")
            .inject("api.test", Header.bearer(Secret.of(TOKEN)))
            .build();
    Interception i = Interception.forPolicy(policy, "t", Duration.ofHours(1)).orElseThrow();
    EgressProxy p =
        new EgressProxy(
            policy,
            StaticResolver.of("api.test", "127.0.0.1").with("other.test", "127.0.0.1"),
            events::add,
            null,
            "sb-opaque",
            i,
            recordingAudit());
    LoopbackProxyServer s = track(new LoopbackProxyServer(p));
    // The client trusts only other.test's real CA: it succeeds only if the proxy did not step in.
    HttpClient c = client(s.port(), other.trustingContext());

    HttpResponse<String> r = get(c, "https://other.test:" + other.port() + "/echo");

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).doesNotContainIgnoringCase("authorization");
    assertThat(i.ca().hosts()).containsExactly("api.test");
  }

  // ---------------------------------------------------------------------------------------------

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
        audit.add(
            "usedAgain "
                + secretName
                + " "
                + kind
                + " "
                + host
                + " "
                + repeated
                + " "
                + statuses
                + " "
                + lastMethod
                + " "
                + lastPath);
      }

      @Override
      public void leakAttempt(
          String secretName, String ownerHost, String host, String method, String path) {
        audit.add("leak " + secretName + " " + ownerHost + " " + host + " " + method + " " + path);
      }

      @Override
      public void requestDenied(
          String host, String method, String path, String rule, String reason) {
        audit.add("denied " + host + " " + method + " " + path + " " + rule);
      }
    };
  }

  private HttpClient client() {
    return client(proxy.port(), LoopbackHttpsOrigin.trusting(interception.ca().certificate()));
  }

  private static HttpClient client(int proxyPort, SSLContext trust) {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", proxyPort)))
        .sslContext(trust)
        .connectTimeout(WAIT)
        .build();
  }

  private static HttpRequest.Builder request(String url) {
    return HttpRequest.newBuilder(URI.create(url)).timeout(WAIT);
  }

  private static HttpResponse<String> get(HttpClient c, String url) throws Exception {
    return c.send(request(url).build(), HttpResponse.BodyHandlers.ofString());
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }
}
