package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.ExposeException;
import io.agentnest.Exposed;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.docker.internal.DockerEngine;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Sandbox#expose}: servers inside a sandbox with no network interface, reached from the
 * host's loopback over the agent channel. The servers are the standard-library Python of {@code
 * expose/servers.py}.
 */
@ExtendWith(DockerEngineRequired.class)
class ExposeIT {
  @TempDir static Path auditDir;
  static AuditLog log;
  static Sandbox sb;
  static final HttpClient HTTP = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    log = AuditLog.open(auditDir);
    // 64 carried connections cost the agent two threads each and the echo server one more.
    sb = Sandbox.create(SandboxConfig.builder().auditLog(log).pidsLimit(1024).build());
    try (InputStream in = ExposeIT.class.getResourceAsStream("/expose/servers.py")) {
      sb.files().write("servers.py", in.readAllBytes());
    }
    serve("http", 8000);
    serve("ws", 8001);
    serve("echo", 8002);
    serve("flood", 8003);
  }

  @AfterAll
  static void stop() {
    if (sb != null) {
      sb.close();
    }
    if (log != null) {
      log.close();
    }
  }

  static void serve(String mode, int port) {
    sb.start(
        List.of("python3", "servers.py", mode, String.valueOf(port)),
        ExecOptions.builder().timeout(Duration.ofMinutes(10)).build());
    ExecResult up =
        sb.runCode(
            "import socket, time\n"
                + "deadline = time.time() + 20\n"
                + "while True:\n"
                + "    try:\n"
                + "        socket.create_connection(('127.0.0.1', "
                + port
                + "), 1).close(); break\n"
                + "    except OSError:\n"
                + "        if time.time() > deadline: raise\n"
                + "        time.sleep(0.05)\n");
    assertThat(up.exitCode()).as(up.stderr()).isZero();
  }

  @Test
  void anHttpRequestAndItsBodyGoInAndTheAnswerComesOut() throws Exception {
    try (Exposed web = sb.expose(8000)) {
      assertThat(web.sandboxPort()).isEqualTo(8000);
      assertThat(web.uri().toString()).isEqualTo("http://127.0.0.1:" + web.port() + "/");
      HttpResponse<String> get =
          HTTP.send(
              HttpRequest.newBuilder(web.uri().resolve("/hello?x=1")).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(get.statusCode()).isEqualTo(200);
      assertThat(get.body()).isEqualTo("hello from the sandbox /hello?x=1");

      byte[] body = new byte[3 << 20];
      for (int i = 0; i < body.length; i++) {
        body[i] = (byte) (i * 31 + 7);
      }
      HttpResponse<String> post =
          HTTP.send(
              HttpRequest.newBuilder(web.uri().resolve("/upload"))
                  .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(post.body())
          .isEqualTo(
              "got "
                  + body.length
                  + " bytes, sha256 "
                  + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body)));
      // The same keep-alive connection serves many requests.
      for (int i = 0; i < 20; i++) {
        assertThat(
                HTTP.send(
                        HttpRequest.newBuilder(web.uri().resolve("/n" + i)).build(),
                        HttpResponse.BodyHandlers.ofString())
                    .body())
            .endsWith("/n" + i);
      }
    }
  }

  @Test
  void aWebSocketUpgradeAndItsMessagesBothWays() throws Exception {
    try (Exposed ws = sb.expose(8001)) {
      List<String> got = new ArrayList<>();
      CompletableFuture<Void> three = new CompletableFuture<>();
      WebSocket socket =
          HTTP.newWebSocketBuilder()
              .buildAsync(
                  URI.create("ws://127.0.0.1:" + ws.port() + "/chat"),
                  new WebSocket.Listener() {
                    @Override
                    public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                      synchronized (got) {
                        got.add(data.toString());
                        if (got.size() == 3) {
                          three.complete(null);
                        }
                      }
                      w.request(1);
                      return null;
                    }
                  })
              .get(10, TimeUnit.SECONDS);
      for (String m : List.of("one", "two", "x".repeat(1000))) {
        socket.sendText(m, true).get(10, TimeUnit.SECONDS);
      }
      three.get(10, TimeUnit.SECONDS);
      assertThat(got).containsExactly("echo: one", "echo: two", "echo: " + "x".repeat(1000));
      socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void closingStopsTheListenerAndIsAudited() throws Exception {
    Exposed echo = sb.expose(8002);
    int port = echo.port();
    try (Socket s = connect(port)) {
      assertThat(roundTrip(s, "ping")).isEqualTo("ping");
      echo.close();
      assertThat(echo.isOpen()).isFalse();
      // The carried connection ends with the port.
      s.setSoTimeout(10_000);
      assertThat(s.getInputStream().read()).isEqualTo(-1);
    }
    // The listener's close completes once its accepting thread has let go of it.
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThatThrownBy(() -> connect(port).close())
                    .isInstanceOf(ConnectException.class));
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(events("port.closed"))
                    .anySatisfy(
                        e -> {
                          assertThat(e.data().get("host_port")).hasToString("" + port);
                          assertThat(e.data().get("port")).hasToString("8002");
                        }));
    assertThat(events("port.exposed"))
        .anySatisfy(e -> assertThat(e.data().get("host_port")).hasToString("" + port));
    assertThat(events("port.connection"))
        .anySatisfy(e -> assertThat(e.data().get("host_port")).hasToString("" + port));
  }

  @Test
  void badPortsAreRefusedAndAPortWithNoServerClosesTheConnection() throws Exception {
    for (int bad : new int[] {0, -1, 65536}) {
      assertThatThrownBy(() -> sb.expose(bad))
          .isInstanceOfSatisfying(
              ExposeException.class,
              e -> assertThat(e.reason()).isEqualTo(ExposeException.Reason.BAD_PORT))
          .hasMessageContaining("1 to 65535");
    }
    try (Exposed taken = sb.expose(8000)) {
      assertThatThrownBy(() -> sb.expose(8000, taken.port()))
          .isInstanceOfSatisfying(
              ExposeException.class,
              e -> assertThat(e.reason()).isEqualTo(ExposeException.Reason.HOST_PORT_UNAVAILABLE))
          .hasMessageContaining("pick a free host port");
    }
    try (Exposed nothing = sb.expose(8999);
        Socket s = connect(nothing.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write("hello?".getBytes(StandardCharsets.UTF_8));
      assertThat(s.getInputStream().read()).isEqualTo(-1);
    }
  }

  @Test
  void theEgressEndpointCannotBeExposed() {
    try (Sandbox net =
        Sandbox.create(
            SandboxConfig.builder().network(NetworkPolicy.allowlist("example.invalid")).build())) {
      assertThatThrownBy(() -> net.expose(3128))
          .isInstanceOfSatisfying(
              ExposeException.class,
              e -> assertThat(e.reason()).isEqualTo(ExposeException.Reason.BAD_PORT))
          .hasMessageContaining("egress proxy endpoint");
    }
  }

  @Test
  void connectionsPastTheBoundAreClosedAndFreedSlotsAreReused() throws Exception {
    try (Exposed echo = sb.expose(8002)) {
      List<Socket> held = new ArrayList<>();
      try {
        for (int i = 0; i < 64; i++) {
          Socket s = connect(echo.port());
          held.add(s);
          assertThat(roundTrip(s, "c" + i)).isEqualTo("c" + i);
        }
        assertThat(echo.openConnections()).isEqualTo(64);
        for (int i = 0; i < 3; i++) {
          try (Socket extra = connect(echo.port())) {
            extra.setSoTimeout(10_000);
            assertThat(extra.getInputStream().read()).isEqualTo(-1);
          }
        }
        for (int i = 0; i < 8; i++) {
          held.remove(0).close();
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> echo.openConnections() <= 56);
        try (Socket again = connect(echo.port())) {
          assertThat(roundTrip(again, "again")).isEqualTo("again");
        }
      } finally {
        for (Socket s : held) {
          s.close();
        }
      }
    }
  }

  @Test
  void aSandboxThatFloodsAReaderThatDoesNotReadIsHeldBack() throws Exception {
    try (Exposed flood = sb.expose(8003);
        Socket s = new Socket()) {
      s.setReceiveBufferSize(64 * 1024);
      s.connect(new InetSocketAddress("127.0.0.1", flood.port()), 10_000);
      s.getInputStream().readNBytes(1);
      long first = floodCount();
      await().pollDelay(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10)).until(() -> true);
      long a = floodCount();
      await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(10)).until(() -> true);
      long b = floodCount();
      // Held back: the host window (256 KiB) plus socket buffers on both sides, then nothing.
      assertThat(b).isLessThan(32L << 20).isEqualTo(a);
      assertThat(first).isLessThanOrEqualTo(b);
      // Reading lets it go on.
      s.getInputStream().readNBytes(4 << 20);
      await().atMost(Duration.ofSeconds(10)).until(() -> floodCount() > b);
    }
  }

  @Test
  void connectionsEndWhenTheSandboxDiesUnderThem() throws Exception {
    try (Sandbox other = Sandbox.create(SandboxConfig.builder().build())) {
      try (InputStream in = ExposeIT.class.getResourceAsStream("/expose/servers.py")) {
        other.files().write("servers.py", in.readAllBytes());
      }
      other.start(
          List.of("python3", "servers.py", "echo", "8002"),
          ExecOptions.builder().timeout(Duration.ofMinutes(5)).build());
      ExecResult up =
          other.runCode(
              "import socket, time\nd = time.time() + 20\nwhile True:\n    try:\n"
                  + "        socket.create_connection(('127.0.0.1', 8002), 1).close(); break\n"
                  + "    except OSError:\n"
                  + "        if time.time() > d: raise\n"
                  + "        time.sleep(0.05)\n");
      assertThat(up.exitCode()).as(up.stderr()).isZero();
      Exposed echo = other.expose(8002);
      try (Socket s = connect(echo.port())) {
        assertThat(roundTrip(s, "alive")).isEqualTo("alive");
        // The engine ends the container behind the host's back: the agent is gone.
        DockerEngine.connect().client().killContainerCmd(other.id()).exec();
        s.setSoTimeout(10_000);
        assertThat(s.getInputStream().read()).isEqualTo(-1);
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> !echo.isOpen());
    }
  }

  static long floodCount() {
    ExecResult r = sb.exec("cat /tmp/flood.count");
    return Long.parseLong(r.stdout().strip());
  }

  static List<AuditEvent> events(String type) {
    return log.query(AuditQuery.builder().sandbox(sb.id()).type(type).limit(1000).build());
  }

  static Socket connect(int port) throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
    return s;
  }

  static String roundTrip(Socket s, String msg) throws IOException {
    s.setSoTimeout(10_000);
    OutputStream out = s.getOutputStream();
    out.write(msg.getBytes(StandardCharsets.UTF_8));
    out.flush();
    byte[] got = s.getInputStream().readNBytes(msg.length());
    return new String(got, StandardCharsets.UTF_8);
  }
}
