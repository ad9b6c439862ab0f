package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Header;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The proxy keeps verified upstream connections of an intercepted host between the sandbox's
 * tunnels: against a TLS origin on loopback that counts its connections and can close them behind
 * the proxy's back, as an idle-timing server does.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UpstreamReuseTest {
  private static final String TOKEN = "ghp_reuseTestTokenNeverInTheSandbox012";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final List<NetworkEvent> events = new CopyOnWriteArrayList<>();
  private CountingOrigin origin;
  private Interception interception;
  private EgressProxy proxy;
  private LoopbackProxyServer server;

  @AfterEach
  void stop() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  void start(boolean closeAfterEachResponse) throws IOException {
    origin = track(new CountingOrigin(closeAfterEachResponse));
    NetworkPolicy policy =
        NetworkPolicy.allow("api.test:" + origin.port())
            .allowAddress("127.0.0.0/8")
            .inject("api.test", Header.bearer(Secret.named("GITHUB_TOKEN", TOKEN)))
            .build();
    interception =
        Interception.forPolicy(
                policy,
                "reuse",
                Duration.ofHours(1),
                LoopbackHttpsOrigin.trusting(origin.ca.certificate()))
            .orElseThrow();
    proxy =
        new EgressProxy(
            policy,
            StaticResolver.of("api.test", "127.0.0.1"),
            events::add,
            null,
            "sb-reuse",
            interception,
            CredentialAudit.NONE);
    server = track(new LoopbackProxyServer(proxy));
  }

  @Test
  void tunnelsOneAfterTheOtherShareOneVerifiedUpstreamConnection() throws Exception {
    start(false);
    for (int i = 0; i < 3; i++) {
      String r =
          exchange("GET /n" + i + " HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n");
      assertThat(r)
          .startsWith("HTTP/1.1 200")
          .contains("path=/n" + i)
          .contains("auth=Bearer " + "*".repeat(TOKEN.length()))
          .contains("token-ok=true")
          .contains("Connection: close"); // echoed, masked by the proxy
    }
    assertThat(origin.accepted).hasValue(1);
    assertThat(origin.requests).hasValue(3);
  }

  @Test
  void aPooledConnectionTheServerClosedIsReplacedForARequestWithoutBody() throws Exception {
    start(true);
    assertThat(exchange(get("/first"))).startsWith("HTTP/1.1 200");
    // The origin has closed its side of that connection by now, while it sits in the pool.
    origin.await(origin.hungUp, 1);

    String r = exchange(get("/second"));

    assertThat(r).startsWith("HTTP/1.1 200").contains("path=/second");
    assertThat(origin.accepted).hasValue(2);
  }

  @Test
  void aConnectionWithBytesNobodyAskedForIsNotKept() throws Exception {
    start(false);
    origin.unasked = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSTALE\n";
    assertThat(exchange(get("/first"))).startsWith("HTTP/1.1 200").doesNotContain("STALE");

    String r = exchange(get("/second"));

    assertThat(r).contains("path=/second").doesNotContain("STALE");
    assertThat(origin.accepted).hasValue(2);
  }

  @Test
  void aMalformedResponseEndsTheTunnelAndIsNotBlamedOnTheRequest() throws Exception {
    start(false);
    origin.replacement = "HTTP/1.1 200 OK\r\nBad\u0001Header: x\r\n\r\n";

    String r = exchange(get("/x"));

    assertThat(r).isEmpty();
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (events.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(events)
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.reason()).contains("bad response from api.test");
              assertThat(e.reason()).doesNotContain("bad request");
            });
  }

  @Test
  void aRequestWithABodyNeverGoesOnAPooledConnection() throws Exception {
    start(false);
    assertThat(exchange(get("/warm"))).startsWith("HTTP/1.1 200");

    String r =
        exchange(
            "POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n"
                + "Connection: close\r\n\r\nhello");

    assertThat(r).startsWith("HTTP/1.1 200").contains("body=5");
    assertThat(origin.accepted).hasValue(2);
  }

  @Test
  void closingTheProxyClosesItsIdleUpstreamConnections() throws Exception {
    start(false);
    assertThat(exchange(get("/x"))).startsWith("HTTP/1.1 200");

    proxy.close();

    origin.await(origin.closed, 1);
    assertThat(origin.closed).hasValue(1);
  }

  // ---------------------------------------------------------------------------------------------

  private static String get(String path) {
    return "GET " + path + " HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n";
  }

  /** One tunnel through the proxy, one request on it, everything until the proxy closes. */
  private String exchange(String request) throws IOException {
    String target = "api.test:" + origin.port();
    try (SSLSocket s =
        TlsTunnels.open(
            server.port(), "api.test", origin.port(), interception.ca().certificate(), WAIT)) {
      s.getOutputStream()
          .write(
              request
                  .replace("Host: api.test\r\n", "Host: " + target + "\r\n")
                  .getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      int n;
      while (out.size() < (1 << 20) && (n = s.getInputStream().read(buf)) >= 0) {
        out.write(buf, 0, n);
      }
      return out.toString(StandardCharsets.ISO_8859_1);
    }
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  /** A keep-alive HTTPS origin that counts its connections; it may close each after one answer. */
  static final class CountingOrigin implements AutoCloseable {
    final InterceptionCa ca =
        InterceptionCa.create("reuse-origin", List.of("api.test"), Duration.ofDays(1));
    final AtomicInteger accepted = new AtomicInteger();
    final AtomicInteger requests = new AtomicInteger();
    final AtomicInteger closed = new AtomicInteger();
    final AtomicInteger hungUp = new AtomicInteger();
    private final SSLServerSocket socket;
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final boolean closeAfterEach;

    /** Sent right after each response, in the same write: a server talking out of turn. */
    volatile String unasked = "";

    /** Sent instead of the response when set. */
    volatile String replacement = "";

    CountingOrigin(boolean closeAfterEach) throws IOException {
      this.closeAfterEach = closeAfterEach;
      socket =
          (SSLServerSocket)
              ca.serverContext("api.test")
                  .getServerSocketFactory()
                  .createServerSocket(0, 16, InetAddress.getLoopbackAddress());
      pool.execute(this::acceptLoop);
    }

    int port() {
      return socket.getLocalPort();
    }

    void await(AtomicInteger counter, int n) throws InterruptedException {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (counter.get() < n && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
    }

    private void acceptLoop() {
      while (!socket.isClosed()) {
        try {
          Socket s = socket.accept();
          int id = accepted.incrementAndGet();
          pool.execute(() -> serve(s, id));
        } catch (IOException e) {
          return;
        }
      }
    }

    private void serve(Socket s, int id) {
      try (s) {
        s.setSoTimeout((int) WAIT.toMillis() * 3);
        BufferedInputStream in = new BufferedInputStream(s.getInputStream());
        OutputStream out = s.getOutputStream();
        for (int i = 0; i < 100; i++) {
          LineReader reader = new LineReader(in);
          Head h = Head.read(reader, 8192, "request");
          if (h == null) {
            return;
          }
          requests.incrementAndGet();
          long length = 0;
          for (String v : h.all("content-length")) {
            length = Long.parseLong(v.trim());
          }
          long read = in.readNBytes((int) Math.min(length, 1 << 20)).length;
          String auth = String.join(",", h.all("authorization"));
          String body =
              "conn="
                  + id
                  + " path="
                  + h.startLine.split(" ")[1]
                  + " auth="
                  + auth
                  + " body="
                  + read
                  + " token-ok="
                  + auth.equals("Bearer " + TOKEN)
                  + "\n";
          // One write, so one TLS record: head, body and anything said out of turn.
          if (!replacement.isEmpty()) {
            out.write(replacement.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            continue;
          }
          out.write(
              ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                      + body.length()
                      + "\r\n\r\n"
                      + body
                      + unasked)
                  .getBytes(StandardCharsets.ISO_8859_1));
          out.flush();
          if (closeAfterEach) {
            // close_notify and FIN now, as a server ending an idle connection does
            s.shutdownOutput();
            hungUp.incrementAndGet();
            return;
          }
          if (h.all("connection").stream()
              .anyMatch(v -> v.toLowerCase(Locale.ROOT).contains("close"))) {
            return;
          }
        }
      } catch (IOException | BadMessage e) {
        // the proxy went away
      } finally {
        closed.incrementAndGet();
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
      pool.shutdownNow();
    }
  }
}
