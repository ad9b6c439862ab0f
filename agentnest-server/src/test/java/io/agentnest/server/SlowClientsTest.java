package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 42, HIGH 2: a client without a key held every request thread by sending sign-in bodies one
 * byte at a time, and every tenant waited. These attacks run against a server on 127.0.0.1 this
 * test starts, with a small pool (16 threads) so that a bounded number of connections (40) is more
 * than there are threads; every socket is closed at the end.
 */
class SlowClientsTest {
  static final int THREADS = 16;
  static final int SLOW = 40;

  static AgentNestServer server(TenantStore store, ServerLimits limits) {
    AgentNestServer s =
        new AgentNestServer(
            ServerConfig.parse("listen: {host: 127.0.0.1, port: 0}\n", "test"),
            store,
            sc -> {
              throw new IllegalStateException("no sandbox is made in this test");
            },
            List::of,
            Clock.systemUTC(),
            Map.of());
    s.limits(limits);
    return s;
  }

  /** Opens a sign-in whose body never arrives: headers and one byte of a 100-byte body. */
  static Socket slowSignIn(int port) throws IOException {
    Socket s = new Socket("127.0.0.1", port);
    s.setSoTimeout(20_000);
    OutputStream out = s.getOutputStream();
    out.write(
        ("POST /console/session HTTP/1.1\r\nHost: 127.0.0.1:"
                + port
                + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            .getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return s;
  }

  @Test
  void slowSignInBodiesBeyondThePoolLeaveAnotherTenantServed(@TempDir Path dir) throws Exception {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            server(store, new ServerLimits(THREADS, 64, 512, 30_000, 1L << 20, 64L << 20))) {
      String key = store.add(new Tenant("other", 2, 1L << 30, 1, 100, null, null), null);
      int port = server.start();
      List<Socket> held = new ArrayList<>();
      try {
        for (int i = 0; i < SLOW; i++) {
          held.add(slowSignIn(port));
        }
        // Long enough for the server to take up every held request (on the old code each then
        // waits for its body in a request thread, and all 16 are taken).
        Thread.sleep(1_000);
        Http http = new Http(port);
        long start = System.nanoTime();
        Http.Reply r = http.get("/v1/tenant", key);
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        assertThat(r.json().get("name").asText()).isEqualTo("other");
        // The issue asks for 100 ms; on this shared, loaded 2-core machine only a generous bound
        // is safe to assert: the old code never answered while the bodies were held.
        assertThat(millis).isLessThan(2_000);
        assertThat(http.get("/v1/health", null).status()).isEqualTo(200);
      } finally {
        for (Socket s : held) {
          s.close();
        }
      }
    }
  }

  @Test
  void aBodyTooSlowForTheMinimumRateIsRefusedAndItsConnectionFreed(@TempDir Path dir)
      throws Exception {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            server(store, new ServerLimits(THREADS, 64, 512, 30_000, 1L << 20, 64L << 20))) {
      int port = server.start();
      try (Socket s = slowSignIn(port)) {
        // One more byte a second later: 2 bytes in a second is under 512 bytes/s, so the body is
        // refused, not waited for until the idle timeout (30 s here).
        Thread.sleep(1_000);
        OutputStream out = s.getOutputStream();
        out.write('"');
        out.flush();
        Thread.sleep(300);
        out.write('k');
        out.flush();
        long start = System.nanoTime();
        String answer = readSome(s.getInputStream());
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertThat(answer).startsWith("HTTP/1.1 4");
        assertThat(millis).as("refused well before the idle timeout").isLessThan(15_000);
      }
    }
  }

  @Test
  void aSilentConnectionIsClosedAtTheIdleTimeout(@TempDir Path dir) throws Exception {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            server(store, new ServerLimits(THREADS, 64, 512, 1_000, 4096, 64L << 20))) {
      int port = server.start();
      try (Socket s = slowSignIn(port)) {
        long start = System.nanoTime();
        String answer = readSome(s.getInputStream());
        long millis = (System.nanoTime() - start) / 1_000_000;
        // Either an error answer or the close itself; never a wait without end.
        assertThat(answer.isEmpty() || answer.startsWith("HTTP/1.1 4")).as(answer).isTrue();
        assertThat(millis).isLessThan(15_000);
      }
    }
  }

  @Test
  void oneAddressHoldsNoMoreConnectionsThanItsBound(@TempDir Path dir) throws Exception {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            server(store, new ServerLimits(THREADS, 8, 512, 30_000, 4096, 64L << 20))) {
      int port = server.start();
      List<Socket> held = new ArrayList<>();
      try {
        for (int i = 0; i < 8; i++) {
          held.add(slowSignIn(port));
        }
        Thread.sleep(300);
        try (Socket extra = slowSignIn(port)) {
          // The ninth is closed by the server as it opens: end of stream, no answer.
          assertThat(readSome(extra.getInputStream())).isEmpty();
        }
      } finally {
        for (Socket s : held) {
          s.close();
        }
      }
      // Once they are gone the address is served again.
      Http.Reply r = null;
      for (int i = 0; i < 50; i++) {
        try {
          r = new Http(port).get("/v1/health", null);
          if (r.status() == 200) {
            break;
          }
        } catch (UncheckedIOException stillClosing) {
          // the server has not yet seen all eight close
        }
        Thread.sleep(100);
      }
      assertThat(r).isNotNull();
      assertThat(r.status()).isEqualTo(200);
    }
  }

  /** What the server sends until it closes (at most 4 KiB; "" for a plain close). */
  static String readSome(InputStream in) throws IOException {
    byte[] buf = new byte[4096];
    int n = 0;
    try {
      while (n < buf.length) {
        int r = in.read(buf, n, buf.length - n);
        if (r < 0) {
          break;
        }
        n += r;
        if (new String(buf, 0, n, StandardCharsets.US_ASCII).contains("\r\n\r\n")) {
          break;
        }
      }
    } catch (SocketTimeoutException e) {
      throw new AssertionError("the server neither answered nor closed within 20 s", e);
    } catch (IOException reset) {
      // a reset is a close too
    }
    return new String(buf, 0, n, StandardCharsets.US_ASCII);
  }
}
