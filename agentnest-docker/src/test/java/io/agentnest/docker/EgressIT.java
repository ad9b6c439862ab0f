package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.agentnest.ApprovalDecision;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.StaticResolver;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Egress through the host proxy, from real code in a real sandbox. The test servers listen on the
 * host's loopback; a test-only resolver maps test names to them, and the policy explicitly allows
 * 127.0.0.1 as the test allowance. Nothing leaves this machine.
 */
@ExtendWith(DockerEngineRequired.class)
class EgressIT {
  static HttpServer http;
  static ServerSocket echo;
  static ExecutorService pool;
  static int httpPort;
  static int echoPort;
  static Sandbox sandbox;
  static final List<NetworkEvent> events = new CopyOnWriteArrayList<>();

  /** The OCI runtime under test; subclasses run the same tests on another one. */
  static String runtime = "runc";

  @BeforeAll
  static void start() throws Exception {
    pool = Executors.newCachedThreadPool();
    http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    http.createContext(
        "/",
        ex -> {
          byte[] body =
              ("hello from " + ex.getRequestURI().getPath()).getBytes(StandardCharsets.UTF_8);
          if (ex.getRequestURI().getPath().equals("/big")) {
            body = new byte[20 << 20];
            for (int i = 0; i < body.length; i++) {
              body[i] = (byte) (i % 251);
            }
          }
          ex.sendResponseHeaders(200, body.length);
          try (OutputStream o = ex.getResponseBody()) {
            o.write(body);
          }
        });
    http.setExecutor(pool);
    http.start();
    httpPort = http.getAddress().getPort();
    echo = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
    echoPort = echo.getLocalPort();
    pool.execute(
        () -> {
          for (int i = 0; i < 1000 && !echo.isClosed(); i++) {
            try {
              Socket s = echo.accept();
              pool.execute(
                  () -> {
                    try (s;
                        InputStream in = s.getInputStream();
                        OutputStream out = s.getOutputStream()) {
                      in.transferTo(out);
                    } catch (Exception ignored) {
                      // client went away
                    }
                  });
            } catch (Exception e) {
              return;
            }
          }
        });
    EgressResolvers.replaceForTests(
        StaticResolver.of("allowed.test", "127.0.0.1")
            .with("files.pypi.test", "127.0.0.1")
            .with("evil-pypi.test", "127.0.0.1")
            .with("rebind.test", "127.0.0.2")
            .with("metadata.test", "169.254.169.254")
            .with("private.test", "10.1.2.3")
            .with("ask.test", "127.0.0.1"));
    sandbox = createMain();
  }

  static Sandbox createMain() {
    return Sandbox.create(
        SandboxConfig.builder()
            .runtime(runtime)
            .network(
                NetworkPolicy.builder()
                    .allow("allowed.test:" + httpPort)
                    .allow("allowed.test:" + echoPort)
                    .allow("*.pypi.test:" + httpPort)
                    .allow("rebind.test:" + httpPort)
                    .allow("metadata.test:" + httpPort)
                    .allow("private.test:" + httpPort)
                    .allowAddress("127.0.0.1")
                    .build())
            .onNetworkEvent(events::add)
            .build());
  }

  @AfterAll
  static void stop() throws Exception {
    EgressResolvers.replaceForTests(null);
    if (sandbox != null) {
      sandbox.close();
    }
    http.stop(0);
    echo.close();
    pool.shutdownNow();
  }

  @BeforeEach
  void clear() {
    events.clear();
  }

  static String py(String code) {
    ExecResult r =
        sandbox.runCode(code, ExecOptions.builder().timeout(Duration.ofSeconds(60)).build());
    assertThat(r.error()).as(r.stdout() + r.stderr()).isNull();
    return String.valueOf(r.result());
  }

  static String get(String url) {
    return py(
        "import urllib.request, urllib.error\n"
            + "try:\n"
            + "    r = urllib.request.urlopen('"
            + url
            + "', timeout=20)\n"
            + "    out = '%d %s' % (r.status, r.read()[:200].decode())\n"
            + "except urllib.error.HTTPError as e:\n"
            + "    out = '%d %s' % (e.code, e.read().decode()[:300])\n"
            + "except Exception as e:\n"
            + "    out = 'ERR %s' % e\n"
            + "out");
  }

  /** A raw CONNECT through the sandbox's proxy endpoint; returns the status line. */
  static String connect(String target) {
    return connect(target, "allowed.test");
  }

  /**
   * A raw CONNECT through the sandbox's proxy endpoint that, once the tunnel is up, sends a real
   * TLS ClientHello (Python's ssl) asking for {@code sni}; returns the status line, then after ' |
   * ' 'echoed' when the echo server sent the hello back, else the hex of what came back.
   */
  static String connect(String target, String sni) {
    return py(
        "import socket, ssl\n"
            + "bio_in, bio_out = ssl.MemoryBIO(), ssl.MemoryBIO()\n"
            + "tls = ssl.create_default_context().wrap_bio(bio_in, bio_out, server_hostname='"
            + sni
            + "')\n"
            + "try:\n"
            + "    tls.do_handshake()\n"
            + "except ssl.SSLWantReadError:\n"
            + "    pass\n"
            + "hello = bio_out.read()\n"
            + "s = socket.create_connection(('127.0.0.1', 3128), timeout=20)\n"
            + "s.sendall(b'CONNECT "
            + target
            + " HTTP/1.1\\r\\nHost: "
            + target
            + "\\r\\n\\r\\n')\n"
            + "head = b''\n"
            + "while b'\\r\\n\\r\\n' not in head and len(head) < 65536:\n"
            + "    c = s.recv(4096)\n"
            + "    if not c: break\n"
            + "    head += c\n"
            + "line = head.split(b'\\r\\n')[0].decode()\n"
            + "if line.split()[1:2] == ['200']:\n"
            + "    s.sendall(hello); s.shutdown(socket.SHUT_WR)\n"
            + "    data = b''\n"
            + "    while len(data) < 1 << 20:\n"
            + "        c = s.recv(65536)\n"
            + "        if not c: break\n"
            + "        data += c\n"
            + "    line += ' | ' + ('echoed' if data == hello else data.hex())\n"
            + "line");
  }

  /** Events are recorded when the proxy finishes a connection, just after the client saw it. */
  static void awaitEvents(int n) {
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> events.size() >= n);
  }

  NetworkEvent onlyEvent() {
    awaitEvents(1);
    assertThat(events).hasSize(1);
    return events.get(0);
  }

  @Test
  void plainHttpToAnAllowedNameWorksAndIsAudited() {
    assertThat(get("http://allowed.test:" + httpPort + "/hello"))
        .isEqualTo("'200 hello from /hello'");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(NetworkEvent.Decision.ALLOWED);
    assertThat(e.host()).isEqualTo("allowed.test");
    assertThat(e.port()).isEqualTo(httpPort);
    assertThat(e.resolvedAddress()).isEqualTo("127.0.0.1");
    assertThat(e.sandboxId()).isEqualTo(sandbox.id());
    assertThat(e.bytesDown()).isPositive();
  }

  @Test
  void connectTunnelCarriesATlsHelloForItsOwnNameBothWays() {
    assertThat(connect("allowed.test:" + echoPort, "allowed.test"))
        .contains("200")
        .endsWith("| echoed'");
    NetworkEvent e = onlyEvent();
    assertThat(e.method()).isEqualTo("CONNECT");
    assertThat(e.decision()).isEqualTo(NetworkEvent.Decision.ALLOWED);
    assertThat(e.bytesUp()).isPositive().isEqualTo(e.bytesDown());
  }

  @Test
  void connectWhoseTlsServerNameFrontsAnotherHostIsRefusedAndAudited() {
    // Python's ssl asks for evil.test inside a tunnel opened to allowed.test: the proxy answers
    // with a TLS unrecognized_name alert and nothing reaches the echo server.
    assertThat(connect("allowed.test:" + echoPort, "evil.test"))
        .contains("200")
        .endsWith("| 15030300020270'");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(NetworkEvent.Decision.DENIED);
    assertThat(e.rule()).isEqualTo("sni-mismatch");
    assertThat(e.reason()).contains("evil.test").contains("allowed.test");
    assertThat(e.bytesUp()).isZero();
  }

  @Test
  void twentyMegabytesArriveIntact() {
    String r =
        py(
            "import urllib.request, hashlib\n"
                + "b = urllib.request.urlopen('http://allowed.test:"
                + httpPort
                + "/big', timeout=60).read()\n"
                + "(len(b), hashlib.sha256(b).hexdigest()[:16])");
    byte[] body = new byte[20 << 20];
    for (int i = 0; i < body.length; i++) {
      body[i] = (byte) (i % 251);
    }
    String expected;
    try {
      expected =
          HexFormat.of()
              .formatHex(MessageDigest.getInstance("SHA-256").digest(body))
              .substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
    assertThat(r).isEqualTo("(20971520, '" + expected + "')");
  }

  @Test
  void refusals() {
    // IP literal targets, v4 and v6 (127.0.0.1 itself is this test's explicit allowance)
    assertThat(connect("127.0.0.2:" + echoPort)).contains("403");
    assertThat(connect("[::1]:" + echoPort)).contains("403");
    // an allowlisted name that resolves to loopback / metadata / private ranges (rebinding)
    assertThat(get("http://rebind.test:" + httpPort + "/x")).startsWith("'403");
    assertThat(get("http://metadata.test:" + httpPort + "/latest/meta-data")).startsWith("'403");
    assertThat(get("http://private.test:" + httpPort + "/x")).startsWith("'403");
    // an allowed name on a port not allowed
    assertThat(get("http://allowed.test:" + (httpPort == 65535 ? 1 : httpPort + 1) + "/x"))
        .startsWith("'403");
    // evil-pypi.test against *.pypi.test, and the real subdomain for contrast
    assertThat(get("http://evil-pypi.test:" + httpPort + "/x")).startsWith("'403");
    assertThat(get("http://files.pypi.test:" + httpPort + "/simple")).startsWith("'200");
    // plain HTTP whose Host header differs from the request target
    String mismatch =
        py(
            "import socket\n"
                + "s = socket.create_connection(('127.0.0.1', 3128), timeout=20)\n"
                + "s.sendall(b'GET http://allowed.test:"
                + httpPort
                + "/x HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n')\n"
                + "s.recv(200).split(b'\\r\\n')[0].decode()");
    assertThat(mismatch).contains("403");
    awaitEvents(9);
    assertThat(events)
        .filteredOn(e -> e.decision() == NetworkEvent.Decision.DENIED)
        .hasSize(8)
        .allSatisfy(e -> assertThat(e.reason()).isNotBlank());
  }

  @Test
  void codeThatIgnoresTheProxyHasNoRoute() {
    String direct =
        py(
            "import socket\n"
                + "out = []\n"
                + "for target in [('1.1.1.1', 80), ('169.254.169.254', 80), ('10.0.0.1', 80)]:\n"
                + "    try:\n"
                + "        socket.create_connection(target, timeout=2); out.append('open')\n"
                + "    except OSError as e:\n"
                + "        out.append('blocked')\n"
                + "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                + "try:\n"
                + "    u.sendto(b'\\x00' * 12, ('8.8.8.8', 53)); out.append('udp sent')\n"
                + "except OSError:\n"
                + "    out.append('udp blocked')\n"
                + "try:\n"
                + "    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); out.append('raw')\n"
                + "except OSError:\n"
                + "    out.append('raw blocked')\n"
                + "try:\n"
                + "    socket.getaddrinfo('example.com', 80); out.append('dns')\n"
                + "except OSError:\n"
                + "    out.append('no dns')\n"
                + "out");
    assertThat(direct)
        .isEqualTo("['blocked', 'blocked', 'blocked', 'udp blocked', 'raw blocked', 'no dns']");
  }

  @Test
  void askModeWaitsForADecisionAndATimeoutDenies() {
    List<String> asked = new CopyOnWriteArrayList<>();
    try (Sandbox ask =
        Sandbox.create(
            SandboxConfig.builder()
                .runtime(runtime)
                .network(
                    NetworkPolicy.builder()
                        .allow("allowed.test:" + httpPort)
                        .allowAddress("127.0.0.1")
                        .onUnknownHost(NetworkPolicy.Mode.ASK)
                        .approvalTimeout(Duration.ofSeconds(2))
                        .build())
                .approvalHandler(
                    req -> {
                      asked.add(req.target());
                      if (req.target().startsWith("ask.test")) {
                        return CompletableFuture.completedFuture(
                            ApprovalDecision.allow("test says yes"));
                      }
                      return new CompletableFuture<>(); // never answers: the timeout denies
                    })
                .onNetworkEvent(events::add)
                .build())) {
      ExecResult ok =
          ask.runCode(
              "import urllib.request\nurllib.request.urlopen('http://ask.test:"
                  + httpPort
                  + "/a', timeout=20).status");
      assertThat(ok.result()).isEqualTo("200");
      // The answer holds for the sandbox's life: a second connection is not asked about.
      ExecResult again =
          ask.runCode(
              "import urllib.request\nurllib.request.urlopen('http://ask.test:"
                  + httpPort
                  + "/b', timeout=20).status");
      assertThat(again.result()).isEqualTo("200");
      ExecResult denied =
          ask.runCode(
              "import urllib.request, urllib.error\ntry:\n"
                  + "    urllib.request.urlopen('http://unknown.test:"
                  + httpPort
                  + "/a', timeout=20); r = 0\n"
                  + "except urllib.error.HTTPError as e:\n    r = e.code\nr");
      assertThat(denied.result()).isEqualTo("403");
    }
    assertThat(asked).hasSize(2);
    awaitEvents(3);
    assertThat(events)
        .extracting(NetworkEvent::decision)
        .containsExactly(
            NetworkEvent.Decision.APPROVED,
            NetworkEvent.Decision.APPROVED,
            NetworkEvent.Decision.DENIED);
    assertThat(events).extracting(NetworkEvent::remembered).containsExactly(false, true, false);
  }

  @Test
  void sandboxWithoutAPolicyHasNoProxyAtAll() {
    try (Sandbox none = Sandbox.create(SandboxConfig.builder().runtime(runtime).build())) {
      ExecResult r =
          none.runCode(
              "import os, socket\n"
                  + "try:\n"
                  + "    socket.create_connection(('127.0.0.1', 3128), timeout=2); p = 'listening'\n"
                  + "except OSError:\n"
                  + "    p = 'closed'\n"
                  + "(p, os.environ.get('HTTPS_PROXY'))");
      assertThat(r.result()).isEqualTo("('closed', None)");
    }
  }
}
