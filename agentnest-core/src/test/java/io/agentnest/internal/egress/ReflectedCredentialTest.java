package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The attack of issue 42 (3): sandbox code asks a host that reflects requests (its credential is
 * injected by the proxy) to echo the request back in a form that splits or hides the token: 16-byte
 * chunks, 4 KiB chunks with padding chosen so the token straddles a boundary, an echo cut one byte
 * short, a gzip'd echo. What the sandbox's client receives, raw and decoded, holds neither the
 * token nor any prefix of it longer than 4 characters.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReflectedCredentialTest {
  private static final String TOKEN = "ghp_R3flectedT0kenNeverInTheSandbox9876";
  private static final String HOST = "echo.test";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private ReflectingOrigin origin;
  private Interception interception;
  private LoopbackProxyServer proxy;

  @BeforeEach
  void start() throws IOException {
    origin = new ReflectingOrigin(HOST);
    NetworkPolicy policy =
        NetworkPolicy.allow(HOST + ":" + origin.port())
            .allowAddress("127.0.0.0/8")
            .inject(HOST, Header.bearer(Secret.named("ECHO_TOKEN", TOKEN)))
            .build();
    UpstreamTrust.replaceForTests(LoopbackHttpsOrigin.trusting(origin.caCertificate()));
    try {
      interception = Interception.forPolicy(policy, "reflect", Duration.ofHours(1)).orElseThrow();
    } finally {
      UpstreamTrust.replaceForTests(null);
    }
    EgressProxy p =
        new EgressProxy(
            policy,
            StaticResolver.of(HOST, "127.0.0.1"),
            e -> {},
            null,
            "sb-reflect",
            interception,
            CredentialAudit.NONE);
    proxy = new LoopbackProxyServer(p);
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    origin.close();
  }

  @Test
  void anEchoIn16ByteChunksHandsTheSandboxOnlyAMask() throws Exception {
    Response r = get("/chunked16", "");

    assertNoPieceOfTheToken(r);
    assertThat(r.body).contains("Bearer " + "*".repeat(TOKEN.length()));
  }

  @Test
  void anEchoIn4KiBChunksPaddedSoTheTokenStraddlesABoundaryIsMasked() throws Exception {
    // The attacker first learns where the (masked) token stands, then pads to put it across the
    // first 4 KiB chunk boundary.
    int at = tokenOffset(get("/chunked4k", "X-Pad: a\r\n"));
    int pad = 1 + (4096 - 10 - at);
    assertThat(pad).isPositive();

    Response r = get("/chunked4k", "X-Pad: " + "a".repeat(pad) + "\r\n");

    assertThat(tokenOffset(r)).isEqualTo(4096 - 10); // the upstream split the token 10 | 29
    assertNoPieceOfTheToken(r);
  }

  @Test
  void anEchoCutShortOfTheTokensEndShowsNoPrefixOfIt() throws Exception {
    // Six digits every time: the echo starts with the request line, so the offset stays put.
    int at = tokenOffset(get("/cut?len=100000", ""));

    for (int shown : new int[] {TOKEN.length() - 1, TOKEN.length() / 2, 7, 5}) {
      Response r = get(String.format(Locale.ROOT, "/cut?len=%06d", at + shown), "");
      assertThat(r.body).hasSize(at + shown);
      assertNoPieceOfTheToken(r);
    }
  }

  @Test
  void aGzipEchoIsDecodedAndMaskedWhateverTheClientAccepts() throws Exception {
    for (String path : new String[] {"/gzip", "/gzip-chunked"}) {
      Response r = get(path, "Accept-Encoding: gzip, br\r\n");

      assertNoPieceOfTheToken(r);
      assertThat(r.body).contains("Bearer " + "*".repeat(TOKEN.length()));
      // The proxy asked for no coding (the server ignored it) and handed over the decoded body.
      assertThat(origin.lastHead())
          .contains("Accept-Encoding: identity\r\n")
          .doesNotContainIgnoringCase("gzip, br");
      assertThat(r.head.toLowerCase(Locale.ROOT)).doesNotContain("content-encoding");
    }
  }

  @Test
  void aCodingTheProxyCannotDecodeIsRefusedNotRelayed() throws Exception {
    Response r = get("/brotli", "");

    assertThat(r.head).startsWith("HTTP/1.1 502");
    assertThat(r.body).contains("'br'").contains("Accept-Encoding: identity");
    assertNoPieceOfTheToken(r);
  }

  @Test
  void anHttp10RequestWithAChunkedBodyIsRefusedBeforeTheCredentialIsSent() throws Exception {
    String request =
        "POST /echo HTTP/1.0\r\nHost: "
            + HOST
            + ":"
            + origin.port()
            + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    Response r = send(request);

    assertThat(r.head).startsWith("HTTP/1.1 400");
    assertThat(r.body).contains("HTTP/1.0").contains("RFC 9112");
    assertThat(origin.requests()).isZero();
  }

  @Test
  void anHttp10PlainRequestWithAChunkedBodyIsRefusedToo() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
      s.setSoTimeout((int) WAIT.toMillis());
      s.getOutputStream()
          .write(
              ("POST http://"
                      + HOST
                      + ":"
                      + origin.port()
                      + "/echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                  .getBytes(StandardCharsets.ISO_8859_1));
      String answer = new String(readBounded(s.getInputStream()), StandardCharsets.ISO_8859_1);
      assertThat(answer).startsWith("HTTP/1.1 400").contains("RFC 9112");
    }
    assertThat(origin.requests()).isZero();
  }

  // ---------------------------------------------------------------------------------------------

  /** What the sandbox's client got: the raw bytes, the head, and the body de-framed and decoded. */
  private record Response(String raw, String head, String body) {}

  private Response get(String target, String extraHeaders) throws IOException {
    return send(
        "GET "
            + target
            + " HTTP/1.1\r\nHost: "
            + HOST
            + ":"
            + origin.port()
            + "\r\n"
            + extraHeaders
            + "Connection: close\r\n\r\n");
  }

  private Response send(String request) throws IOException {
    byte[] raw;
    try (SSLSocket s =
        TlsTunnels.open(proxy.port(), HOST, origin.port(), interception.ca().certificate(), WAIT)) {
      OutputStream out = s.getOutputStream();
      out.write(request.getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      raw = readBounded(s.getInputStream());
    }
    String text = new String(raw, StandardCharsets.ISO_8859_1);
    int end = text.indexOf("\r\n\r\n");
    assertThat(end).as("a response head in %s", text).isPositive();
    String head = text.substring(0, end + 2);
    byte[] body = Arrays.copyOfRange(raw, end + 4, raw.length);
    String lower = head.toLowerCase(Locale.ROOT);
    if (lower.contains("transfer-encoding: chunked")) {
      body = dechunk(body);
    }
    if (lower.contains("content-encoding: gzip")) {
      body = new GZIPInputStream(new ByteArrayInputStream(body)).readAllBytes();
    }
    return new Response(text, head, new String(body, StandardCharsets.ISO_8859_1));
  }

  /** Reads to the end of the stream: at most 1 MiB, each read bounded by the socket's timeout. */
  private static byte[] readBounded(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    while (b.size() < (1 << 20) && (n = in.read(buf)) >= 0) {
      b.write(buf, 0, n);
    }
    return b.toByteArray();
  }

  private static byte[] dechunk(byte[] framed) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    String s = new String(framed, StandardCharsets.ISO_8859_1);
    int pos = 0;
    for (int i = 0; i < 100_000; i++) {
      int eol = s.indexOf("\r\n", pos);
      int size = Integer.parseInt(s.substring(pos, eol).split(";")[0].trim(), 16);
      if (size == 0) {
        break;
      }
      out.write(framed, eol + 2, size);
      pos = eol + 2 + size + 2;
    }
    return out.toByteArray();
  }

  /** Where the masked token stands in an echo's body. */
  private static int tokenOffset(Response r) {
    int i = r.body.indexOf("Bearer " + "*".repeat(TOKEN.length()));
    assertThat(i).as("a masked token in %s", r.body).isNotNegative();
    return i + "Bearer ".length();
  }

  private static void assertNoPieceOfTheToken(Response r) {
    for (String seen : new String[] {r.raw, r.body}) {
      for (int k = 5; k <= TOKEN.length(); k++) {
        assertThat(seen).doesNotContain(TOKEN.substring(0, k));
      }
      for (int i = 0; i + MaskingOutputStream.PIECE <= TOKEN.length(); i++) {
        assertThat(seen).doesNotContain(TOKEN.substring(i, i + MaskingOutputStream.PIECE));
      }
    }
  }
}
