package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Attacks on the streamable-HTTP endpoint as a web page (DNS rebinding, cross-site requests) or
 * another local process would send them: raw HTTP over a socket to a real Jetty on loopback, so
 * every header is exactly what the test wrote.
 */
class HttpGuardTest {
  private static final String TOKEN = "0123456789abcdef0123456789abcdef";
  private static final String INIT =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
          + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}";
  private static final String RUN_SHELL =
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run_shell\","
          + "\"arguments\":{\"command\":\"id\"}}}";

  private final AtomicInteger sandboxes = new AtomicInteger();
  private @Nullable AgentNestMcpServer server;
  private int port;

  private void serve(@Nullable String token) {
    server =
        AgentNestMcpServer.builder()
            .sandboxFactory(
                c -> {
                  sandboxes.incrementAndGet();
                  throw new AssertionError("a refused request must never reach a sandbox");
                })
            .build();
    port = server.serveHttp(new AgentNestMcpServer.HttpOptions("127.0.0.1", 0, token)).port();
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
    assertThat(sandboxes).hasValue(0);
  }

  record Reply(int status, String text) {}

  /** One raw HTTP request; {@code headers} are written as given, one per line. */
  private Reply send(String requestLine, String body, String... headers) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(30_000);
      StringBuilder req = new StringBuilder(requestLine).append("\r\n");
      for (String h : headers) {
        req.append(h).append("\r\n");
      }
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      req.append("Content-Type: application/json\r\n")
          .append("Accept: application/json, text/event-stream\r\n")
          .append("Content-Length: ")
          .append(b.length)
          .append("\r\nConnection: close\r\n\r\n");
      OutputStream out = s.getOutputStream();
      out.write(req.toString().getBytes(StandardCharsets.ISO_8859_1));
      out.write(b);
      out.flush();
      InputStream in = s.getInputStream();
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      int n;
      while (all.size() < (1 << 20) && (n = in.read(buf)) > 0) {
        all.write(buf, 0, n);
      }
      String text = all.toString(StandardCharsets.UTF_8);
      String[] status = text.split(" ", 3);
      return new Reply(Integer.parseInt(status[1]), text);
    }
  }

  private Reply post(String body, String... headers) throws IOException {
    return send("POST /mcp HTTP/1.1", body, headers);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "127.0.0.1.attacker.example",
        "127.0.0.1.attacker.example:8765",
        "localhost.attacker.example",
        "LOCALHOST.ATTACKER.EXAMPLE",
        "localhost.",
        "127.0.0.1.",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "127.1",
        "2130706433",
        "[::ffff:127.0.0.1]",
        "[::1%25lo]",
        "attacker.example"
      })
  void reboundHostsGetNeitherInitializeNorRunShellEvenWithoutAToken(String host)
      throws IOException {
    serve(null);
    Reply init = post(INIT, "Host: " + host);
    assertThat(init.status()).as(init.text()).isIn(400, 403);
    Reply call = post(RUN_SHELL, "Host: " + host, "Mcp-Session-Id: guessed");
    assertThat(call.status()).as(call.text()).isIn(400, 403);
  }

  @Test
  void aRequestWithoutOrWithTwoHostsIsRefused() throws IOException {
    serve(null);
    assertThat(send("POST /mcp HTTP/1.0", INIT).status()).isIn(400, 403);
    assertThat(post(INIT).status()).isIn(400, 403);
    Reply two = post(INIT, "Host: 127.0.0.1", "Host: attacker.example");
    assertThat(two.status()).as(two.text()).isIn(400, 403);
  }

  @Test
  void crossSiteOriginsAreRefusedAndLocalOnesAccepted() throws IOException {
    serve(null);
    for (String origin :
        new String[] {
          "https://attacker.example", "null", "http://127.0.0.1.attacker.example", "http://127.1"
        }) {
      Reply r = post(INIT, "Host: 127.0.0.1:" + port, "Origin: " + origin);
      assertThat(r.status()).as(origin).isEqualTo(403);
      assertThat(r.text()).contains("cross-origin");
    }
    Reply twoOrigins =
        post(
            INIT,
            "Host: 127.0.0.1",
            "Origin: http://localhost:6274",
            "Origin: https://attacker.example");
    assertThat(twoOrigins.status()).isIn(400, 403);
    Reply local = post(INIT, "Host: localhost:" + port, "Origin: http://localhost:6274");
    assertThat(local.status()).as(local.text()).isEqualTo(200);
  }

  @Test
  void loopbackHostSpellingsThatNameThisMachineAreServed() throws IOException {
    serve(null);
    for (String host :
        new String[] {"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port}) {
      Reply r = post(INIT, "Host: " + host);
      assertThat(r.status()).as(host + "\n" + r.text()).isEqualTo(200);
      assertThat(r.text()).contains("\"agentnest\"");
    }
  }

  @Test
  void withATokenOnlyTheExactTokenGetsIn() throws IOException {
    serve(TOKEN);
    String host = "Host: 127.0.0.1:" + port;
    Reply none = post(INIT, host);
    assertThat(none.status()).isEqualTo(401);
    assertThat(none.text()).contains("missing bearer token", "WWW-Authenticate: Bearer");
    for (String wrong :
        new String[] {
          "Bearer ",
          "Bearer nope",
          "Bearer " + TOKEN.substring(0, TOKEN.length() - 1),
          "Bearer " + TOKEN + "0",
          "Bearer " + TOKEN.toUpperCase(Locale.ROOT),
          "Basic " + TOKEN,
          TOKEN
        }) {
      Reply r = post(INIT, host, "Authorization: " + wrong);
      assertThat(r.status()).as(wrong).isEqualTo(401);
      assertThat(r.text()).contains("wrong bearer token");
    }
    assertThat(post(RUN_SHELL, host, "Mcp-Session-Id: x", "Authorization: Bearer x").status())
        .isEqualTo(401);
    Reply right = post(INIT, host, "Authorization: bearer " + TOKEN);
    assertThat(right.status()).as(right.text()).isEqualTo(200);
    // The token does not open the door to a rebound name: Host is checked first.
    Reply rebound =
        post(INIT, "Host: 127.0.0.1.attacker.example", "Authorization: Bearer " + TOKEN);
    assertThat(rebound.status()).isEqualTo(403);
  }

  @Test
  void theTokenIsComparedAsFixedLengthDigests() {
    // Constant time whatever the guess: both sides become 32-byte SHA-256 digests first.
    for (String s : new String[] {"", "x", TOKEN, TOKEN.repeat(100)}) {
      assertThat(TokenCheck.digest(s)).hasSize(32);
    }
    TokenCheck check = new TokenCheck(TOKEN);
    assertThat(check.matches("Bearer " + TOKEN)).isTrue();
    assertThat(check.matches("Bearer  " + TOKEN + " ")).isTrue();
    assertThat(check.matches(null)).isFalse();
    assertThat(check.matches("Bearer " + TOKEN.substring(1))).isFalse();
  }
}
