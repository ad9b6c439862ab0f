package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 42 (9): sandbox code hammers a host with an injected credential over a few keep-alive
 * connections. Each use used to be one {@code network.credential_used} record (1,284 records, 3.4
 * MB, in 8 s from 8 connections); now a connection costs one record at its first use and one with
 * the count when it ends, so the records are bounded by the connections (themselves bounded by the
 * tunnel budget), and no use goes uncounted.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CredentialUseFoldingTest {
  private static final String TOKEN = "ghp_foldingTokenNeverInTheSandbox012345";
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final int CONNECTIONS = 4;
  private static final int REQUESTS_EACH = 150;

  private record Used(String secret, long count, Map<Integer, Long> statuses) {}

  private final List<Used> records = new CopyOnWriteArrayList<>();
  private LoopbackHttpsOrigin api;
  private Interception interception;
  private LoopbackProxyServer proxy;

  @BeforeEach
  void start() throws IOException {
    api = new LoopbackHttpsOrigin("api.test", "api.test", TOKEN);
    NetworkPolicy policy =
        NetworkPolicy.allow("api.test:" + api.port())
            .allowAddress("127.0.0.0/8")
            .inject("api.test", Header.bearer(Secret.named("GITHUB_TOKEN", TOKEN)))
            .build();
    UpstreamTrust.replaceForTests(LoopbackHttpsOrigin.trusting(api.caCertificate()));
    try {
      interception = Interception.forPolicy(policy, "fold", Duration.ofHours(1)).orElseThrow();
    } finally {
      UpstreamTrust.replaceForTests(null);
    }
    proxy =
        new LoopbackProxyServer(
            new EgressProxy(
                policy,
                StaticResolver.of("api.test", "127.0.0.1"),
                e -> {},
                null,
                "sb-fold",
                interception,
                recording()));
  }

  @AfterEach
  void stop() {
    proxy.close();
    api.close();
  }

  @Test
  void manyRequestsOverFewConnectionsGiveTwoRecordsAConnectionCarryingTheCount() throws Exception {
    List<SSLSocket> sockets = new ArrayList<>();
    try {
      for (int c = 0; c < CONNECTIONS; c++) {
        sockets.add(
            TlsTunnels.open(
                proxy.port(), "api.test", api.port(), interception.ca().certificate(), WAIT));
      }
      for (int i = 0; i < REQUESTS_EACH; i++) {
        for (SSLSocket s : sockets) {
          assertThat(whoami(s, api.port())).startsWith("HTTP/1.1 200");
        }
      }
      // While the connections are open: one record each, for the first use.
      assertThat(records).hasSize(CONNECTIONS).allMatch(r -> r.count() == 1);
    } finally {
      for (SSLSocket s : sockets) {
        s.close();
      }
    }
    // The counts are written as each connection ends: wait for them (bounded), not for a time.
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (records.size() < 2 * CONNECTIONS && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }

    assertThat(records).hasSize(2 * CONNECTIONS).allMatch(r -> r.secret().equals("GITHUB_TOKEN"));
    assertThat(records.stream().mapToLong(Used::count).sum())
        .isEqualTo((long) CONNECTIONS * REQUESTS_EACH);
    assertThat(records.stream().filter(r -> r.count() > 1))
        .hasSize(CONNECTIONS)
        .allSatisfy(
            r -> assertThat(r.statuses()).containsExactly(Map.entry(200, REQUESTS_EACH - 1L)));
  }

  /** One keep-alive request; the response head and body are read by their Content-Length. */
  private static String whoami(SSLSocket s, int port) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write(
        ("GET /whoami HTTP/1.1\r\nHost: api.test:" + port + "\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
    InputStream in = s.getInputStream();
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n") && head.length() < 8192) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.append((char) b);
    }
    String h = head.toString();
    int at = h.toLowerCase(Locale.ROOT).indexOf("content-length:");
    int length = Integer.parseInt(h.substring(at + 15, h.indexOf("\r\n", at)).trim());
    in.readNBytes(length);
    return h;
  }

  private CredentialAudit recording() {
    return new CredentialAudit() {
      @Override
      public void used(
          String secretName, Kind kind, String host, String method, String path, int status) {
        records.add(new Used(secretName, 1, Map.of(status, 1L)));
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
        records.add(new Used(secretName, repeated, statuses));
      }

      @Override
      public void leakAttempt(
          String secretName, String ownerHost, String host, String method, String path) {}

      @Override
      public void requestDenied(
          String host, String method, String path, String rule, String reason) {}
    };
  }
}
