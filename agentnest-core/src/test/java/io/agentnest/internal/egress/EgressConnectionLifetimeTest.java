package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.NetworkEvent;
import io.agentnest.NetworkEvent.Decision;
import io.agentnest.NetworkPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 42 (10), against the proxy on loopback: a connection that sends half a request head and
 * stops is closed at the head deadline (110 such connections used to hold 110 host threads for
 * ever), no more than {@link EgressProxy#MAX_PENDING_HEADS} may wait for their head at once, and a
 * tunnel still open when the sandbox goes away is closed and audited with what it moved (a 200 KB
 * upload during {@code agentnest run} used to leave no {@code network.attempt}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EgressConnectionLifetimeTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
  private final List<Socket> clients = new ArrayList<>();
  private ServerSocket sink;
  private final AtomicLong sunk = new AtomicLong();
  private EgressProxy proxy;
  private LoopbackProxyServer server;

  @BeforeEach
  void start() throws IOException {
    // A destination that reads everything and never answers (an upload sink).
    sink = new ServerSocket();
    sink.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    Thread t =
        new Thread(
            () -> {
              try (Socket s = sink.accept()) {
                InputStream in = s.getInputStream();
                byte[] buf = new byte[8192];
                int n;
                while ((n = in.read(buf)) >= 0) {
                  sunk.addAndGet(n);
                }
              } catch (IOException e) {
                // closed by the test
              }
            },
            "test-sink");
    t.setDaemon(true);
    t.start();
    proxy =
        new EgressProxy(
            NetworkPolicy.allow("allowed.test", "allowed.test:" + sink.getLocalPort())
                .allowAddress("127.0.0.1")
                .build(),
            StaticResolver.of("allowed.test", "127.0.0.1"),
            events::add,
            null,
            "sb-lifetime");
    server = new LoopbackProxyServer(proxy, 64, 64);
  }

  @AfterEach
  void stop() throws IOException {
    for (Socket s : clients) {
      s.close();
    }
    server.close();
    sink.close();
  }

  @Test
  void aHalfSentRequestHeadIsClosedAtTheDeadlineAndAudited() throws Exception {
    proxy.headDeadline(Duration.ofMillis(300));
    Socket s = client();
    s.getOutputStream()
        .write(
            "GET http://allowed.test/ HTTP/1.1\r\nHost: allo"
                .getBytes(StandardCharsets.ISO_8859_1));

    String answer = readAll(s);

    assertThat(answer).startsWith("HTTP/1.1 408").contains("did not arrive within 300 ms");
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("head-timeout");
    assertThat(proxy.pendingHeads()).isZero();
  }

  @Test
  void aTunnelWithoutItsTlsHelloIsClosedAtTheDeadline() throws Exception {
    proxy.headDeadline(Duration.ofMillis(300));
    Socket s = client();
    // A name's tunnel must start with a TLS hello; this one sends nothing after CONNECT.
    s.getOutputStream()
        .write(
            ("CONNECT allowed.test:" + sink.getLocalPort() + " HTTP/1.1\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));

    readAll(s); // the proxy ends the connection: the read returns instead of waiting for ever

    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.reason()).contains("TLS hello did not arrive within 300 ms");
  }

  @Test
  void connectionsBeyondTheBoundOfPendingHeadsAreRefusedAtOnce() throws Exception {
    for (int i = 0; i < EgressProxy.MAX_PENDING_HEADS; i++) {
      client()
          .getOutputStream()
          .write("GET http://allowed.test/ HTTP/1.1\r\n".getBytes(StandardCharsets.ISO_8859_1));
    }
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (proxy.pendingHeads() < EgressProxy.MAX_PENDING_HEADS && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(proxy.pendingHeads()).isEqualTo(EgressProxy.MAX_PENDING_HEADS);

    Socket late = client();
    late.getOutputStream()
        .write("GET http://allowed.test/ HTTP/1.1\r\n".getBytes(StandardCharsets.ISO_8859_1));

    assertThat(readAll(late))
        .startsWith("HTTP/1.1 503")
        .contains("already waiting to send a request head or TLS hello");
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.rule()).isEqualTo("pending-heads");
  }

  @Test
  void tunnelsThatNeverSendTheirTlsHelloCountAgainstTheSameBound() throws Exception {
    String connect = "CONNECT allowed.test:" + sink.getLocalPort() + " HTTP/1.1\r\n\r\n";
    for (int i = 0; i < EgressProxy.MAX_PENDING_HEADS; i++) {
      Socket s = client();
      s.getOutputStream().write(connect.getBytes(StandardCharsets.ISO_8859_1));
      assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 200");
    }
    assertThat(proxy.pendingHeads()).isEqualTo(EgressProxy.MAX_PENDING_HEADS);

    Socket late = client();
    late.getOutputStream().write(connect.getBytes(StandardCharsets.ISO_8859_1));

    assertThat(readAll(late)).startsWith("HTTP/1.1 503").contains("TLS hello");
  }

  @Test
  void aTunnelOpenWhenTheSandboxGoesAwayIsClosedAndAuditedWithItsBytes() throws Exception {
    Socket s = client();
    OutputStream out = s.getOutputStream();
    // An address allowed by a range: an opaque tunnel, no TLS needed.
    out.write(
        ("CONNECT 127.0.0.1:" + sink.getLocalPort() + " HTTP/1.1\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
    String established = readHead(s.getInputStream());
    assertThat(established).startsWith("HTTP/1.1 200");
    byte[] upload = new byte[200 * 1024];
    out.write(upload);
    out.flush();
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (sunk.get() < upload.length && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(sunk.get()).isEqualTo(upload.length);
    assertThat(events).isEmpty(); // still open: nothing audited yet

    proxy.shutdown("sandbox sb-lifetime was destroyed", Duration.ofSeconds(2));

    // Audited by the time the sandbox's end returns, not some time after.
    assertThat(events).hasSize(1);
    NetworkEvent e = events.poll();
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
    assertThat(e.bytesUp()).isEqualTo(upload.length);
    assertThat(e.reason()).contains("closed while open: sandbox sb-lifetime was destroyed");
    // And the sandbox's end refuses what comes after it.
    Socket after = client();
    after
        .getOutputStream()
        .write("GET http://allowed.test/ HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
    readAll(after);
    NetworkEvent refused = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(refused).isNotNull();
    assertThat(refused.rule()).isEqualTo("sandbox-destroyed");
  }

  // ---------------------------------------------------------------------------------------------

  private Socket client() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port());
    s.setSoTimeout((int) WAIT.toMillis());
    clients.add(s);
    return s;
  }

  /** Everything until the proxy closes (at most 64 KiB; each read bounded by the timeout). */
  private static String readAll(Socket s) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    InputStream in = s.getInputStream();
    byte[] buf = new byte[4096];
    int n;
    while (b.size() < 64 * 1024 && (n = in.read(buf)) >= 0) {
      b.write(buf, 0, n);
    }
    return b.toString(StandardCharsets.ISO_8859_1);
  }

  private static String readHead(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n") && head.length() < 4096) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.append((char) b);
    }
    return head.toString();
  }
}
