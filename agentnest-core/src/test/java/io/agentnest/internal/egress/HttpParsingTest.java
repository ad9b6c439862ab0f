package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;

/**
 * The proxy's HTTP parsing on its own: whatever bytes a sandbox sends, parsing ends in a result or
 * a {@link BadMessage} (a {@link ClientBodyException} for a body that breaks off), never another
 * exception, and never reads or keeps more than its bounds.
 */
class HttpParsingTest {
  private static final int MAX_START = 8 * 1024;

  private static LineReader reader(byte[] b) {
    return new LineReader(new ByteArrayInputStream(b));
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  // ----------------------------------------------------------------------------- heads

  @Property(tries = 500)
  void aHeadFromArbitraryBytesIsParsedOrRefusedWithinItsBounds(@ForAll("messages") byte[] bytes) {
    LineReader r = reader(bytes);
    Head[] parsed = new Head[1];
    Throwable t = catchThrowable(() -> parsed[0] = Head.read(r, MAX_START, "request"));
    Head h = parsed[0];

    assertThat(t)
        .satisfiesAnyOf(
            x -> assertThat(x).isNull(), x -> assertThat(x).isInstanceOf(BadMessage.class));
    // Start line (and up to four empty lines before it) plus the header block, with terminators.
    assertThat(r.bytes).isLessThanOrEqualTo(5L * (MAX_START + 2) + Head.MAX_HEADER_BYTES + 2);
    if (h != null) {
      assertThat(h.startLine).isNotEmpty().hasSizeLessThanOrEqualTo(MAX_START);
      assertThat(h.headers).hasSizeLessThanOrEqualTo(Head.MAX_HEADERS);
      h.headers.forEach(
          x -> {
            assertThat(HttpSyntax.isToken(x.name)).isTrue();
            assertThat(x.value).doesNotContain("\r", "\n");
          });
    }
  }

  @Test
  void aWellFormedRequestHeadIsParsed() throws Exception {
    Head h =
        Head.read(
            reader(
                ascii(
                    "\r\nGET http://example.org/ HTTP/1.1\r\nHost: example.org\r\nX-A:  b \r\n\r\n")),
            MAX_START,
            "request");

    assertThat(h).isNotNull();
    assertThat(h.startLine).isEqualTo("GET http://example.org/ HTTP/1.1");
    assertThat(h.all("x-a")).containsExactly("b");
    assertThat(h.all("host")).containsExactly("example.org");
  }

  @Test
  void anEmptyStreamIsNoMessage() throws Exception {
    assertThat(Head.read(reader(new byte[0]), MAX_START, "request")).isNull();
  }

  @Test
  void headersThatCouldSmuggleARequestAreRefused() {
    for (String bad :
        new String[] {
          "GET / HTTP/1.1\r\nHost: a\r\n folded: value\r\n\r\n",
          "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
          "GET / HTTP/1.1\r\nHo st: a\r\n\r\n",
          "GET / HTTP/1.1\r\n: a\r\n\r\n",
          "GET / HTTP/1.1\r\nHost: a\u0000\r\n\r\n",
          "GET / HTTP/1.1\r\nHost: a\r\n"
        }) {
      assertThatThrownBy(() -> Head.read(reader(ascii(bad)), MAX_START, "request"))
          .as(bad)
          .isInstanceOf(BadMessage.class);
    }
  }

  @Test
  void tooManyOrTooLargeHeadersAreRefusedByTheirLimit() {
    StringBuilder many = new StringBuilder("GET / HTTP/1.1\r\n");
    for (int i = 0; i <= Head.MAX_HEADERS; i++) {
      many.append("X-").append(i).append(": v\r\n");
    }
    assertThatThrownBy(() -> Head.read(reader(ascii(many + "\r\n")), MAX_START, "request"))
        .hasMessageContaining("more than " + Head.MAX_HEADERS + " headers");
    String big = "GET / HTTP/1.1\r\nX: " + "a".repeat(Head.MAX_HEADER_BYTES) + "\r\n\r\n";
    assertThatThrownBy(() -> Head.read(reader(ascii(big)), MAX_START, "request"))
        .hasMessageContaining(Head.MAX_HEADER_BYTES + "");
    String longLine = "GET /" + "a".repeat(MAX_START) + " HTTP/1.1\r\n\r\n";
    assertThatThrownBy(() -> Head.read(reader(ascii(longLine)), MAX_START, "request"))
        .hasMessageContaining("longer than " + MAX_START);
  }

  // ------------------------------------------------------------------------- authority

  @Property(tries = 1000)
  void anAuthorityFromAnyTextIsParsedOrRefused(@ForAll("authorities") String s) {
    Authority[] parsed = new Authority[1];
    Throwable t = catchThrowable(() -> parsed[0] = Authority.parse(s, -1));
    if (t != null) {
      assertThat(t).isInstanceOf(BadMessage.class);
      return;
    }
    Authority a = parsed[0];
    assertThat(a.port).isBetween(1, 65535);
    assertThat(a.host).isNotEmpty().matches("[A-Za-z0-9.\\-_\\[\\]:]+");
    assertThat(HttpSyntax.printable(a.displayTarget())).isEqualTo(a.displayTarget());
  }

  @Test
  void authoritiesAreReadAsHostAndPort() throws Exception {
    assertThat(Authority.parse("example.org", 80).port).isEqualTo(80);
    assertThat(Authority.parse("example.org:8443", 80).port).isEqualTo(8443);
    Authority v6 = Authority.parse("[2001:db8::1]:443", -1);
    assertThat(v6.host).isEqualTo("[2001:db8::1]");
    assertThat(v6.displayTarget()).isEqualTo("[2001:db8::1]:443");
  }

  @Test
  void authoritiesThatAreAmbiguousOrOutOfRangeAreRefused() {
    for (String bad :
        new String[] {
          "example.org",
          "2001:db8::1",
          "[2001:db8::1",
          "host:0",
          "host:65536",
          ":80",
          "ex ample.org:80",
          "[]:80",
          "h:+80"
        }) {
      assertThatThrownBy(() -> Authority.parse(bad, -1)).as(bad).isInstanceOf(BadMessage.class);
    }
  }

  // ---------------------------------------------------------------------------- bodies

  @Property(tries = 500)
  void aChunkedBodyFromArbitraryBytesIsCopiedOrRefusedAndNeverGrowsUnbounded(
      @ForAll("chunkedBodies") byte[] bytes) {
    BodyFraming chunked = framing("Transfer-Encoding: chunked");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    AtomicLong count = new AtomicLong();

    Throwable t =
        catchThrowable(() -> chunked.copy(new ByteArrayInputStream(bytes), out, count, false));

    assertThat(t)
        .satisfiesAnyOf(
            x -> assertThat(x).isNull(),
            x -> assertThat(x).isInstanceOf(BadMessage.class),
            x -> assertThat(x).isInstanceOf(ClientBodyException.class));
    // Lines are re-terminated with CRLF: at most one extra byte per line ending read.
    assertThat((long) out.size()).isEqualTo(count.get()).isLessThanOrEqualTo(2L * bytes.length + 2);
  }

  @Test
  void aChunkedBodyIsCopiedAsSent() throws Exception {
    byte[] body = ascii("4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-Trailer: t\r\n\r\n");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    AtomicLong count = new AtomicLong();

    framing("Transfer-Encoding: chunked").copy(new ByteArrayInputStream(body), out, count, false);

    assertThat(out.toByteArray()).isEqualTo(body);
    assertThat(count.get()).isEqualTo(body.length);
  }

  @Test
  void aBodyThatEndsEarlyIsTheClientsFault() {
    assertThatThrownBy(
            () ->
                framing("Content-Length: 10")
                    .copy(
                        new ByteArrayInputStream(ascii("short")),
                        new ByteArrayOutputStream(),
                        new AtomicLong(),
                        false))
        .isInstanceOf(ClientBodyException.class)
        .hasMessageContaining("5 bytes early");
  }

  @Test
  void requestFramingThatCouldSmuggleIsRefused() {
    for (String bad :
        new String[] {
          "Transfer-Encoding: chunked\r\nContent-Length: 4",
          "Transfer-Encoding: gzip, chunked",
          "Content-Length: 4\r\nContent-Length: 5",
          "Content-Length: 4, 5",
          "Content-Length: -1",
          "Content-Length: 0x10"
        }) {
      assertThatThrownBy(() -> BodyFraming.ofRequest(head(bad), "HTTP/1.1"))
          .as(bad)
          .isInstanceOf(BadMessage.class);
    }
  }

  @Test
  void repeatedEqualContentLengthsAreOneLength() throws Exception {
    BodyFraming f =
        BodyFraming.ofRequest(head("Content-Length: 4, 4\r\nContent-Length: 4"), "HTTP/1.1");

    assertThat(f.kind).isEqualTo(BodyFraming.Kind.LENGTH);
    assertThat(f.length).isEqualTo(4);
  }

  @Test
  void responsesWithoutABodyHaveNone() throws Exception {
    Head h = head("Content-Length: 10");
    assertThat(BodyFraming.ofResponse(h, "HEAD", 200).hasBody()).isFalse();
    assertThat(BodyFraming.ofResponse(h, "GET", 204).hasBody()).isFalse();
    assertThat(BodyFraming.ofResponse(h, "GET", 304).hasBody()).isFalse();
    assertThat(BodyFraming.ofResponse(head("Transfer-Encoding: gzip"), "GET", 200).kind)
        .isEqualTo(BodyFraming.Kind.UNTIL_CLOSE);
  }

  @Test
  void printableTextIsAsciiAndBounded() {
    String shown = HttpSyntax.printable("bad\r\nX-Injected: 1\u0000" + "x".repeat(10_000));

    assertThat(shown).doesNotContain("\r", "\n", "\u0000").hasSizeLessThan(400);
    assertThat(shown.chars()).allMatch(c -> c >= 0x20 && c < 0x7f);
  }

  private static Head head(String headers) {
    try {
      Head h =
          Head.read(
              reader(ascii("POST http://a/ HTTP/1.1\r\n" + headers + "\r\n\r\n")),
              MAX_START,
              "request");
      assertThat(h).isNotNull();
      return h;
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static BodyFraming framing(String headers) {
    try {
      return BodyFraming.ofRequest(head(headers), "HTTP/1.1");
    } catch (BadMessage e) {
      throw new AssertionError(e);
    }
  }

  // ------------------------------------------------------------------------ generators

  /** Arbitrary bytes, and bytes that look like HTTP (so the parser gets past its first line). */
  @Provide
  Arbitrary<byte[]> messages() {
    Arbitrary<byte[]> noise = Arbitraries.bytes().array(byte[].class).ofMaxSize(4096);
    Arbitrary<byte[]> huge =
        Arbitraries.of((byte) 'a', (byte) ':', (byte) '\n', (byte) ' ')
            .array(byte[].class)
            .ofMinSize(60_000)
            .ofMaxSize(120_000);
    Arbitrary<byte[]> httpish =
        Arbitraries.oneOf(
                Arbitraries.of(
                    "GET ",
                    "CONNECT ",
                    "Host",
                    ": ",
                    "a",
                    "\r\n",
                    "\n",
                    "\r",
                    " ",
                    "\t",
                    ":",
                    "\u0000",
                    "\u00ff",
                    "X-Y: z\r\n"))
            .list()
            .ofMaxSize(400)
            .map(l -> ascii(String.join("", l)));
    return Arbitraries.frequencyOf(Tuple.of(5, noise), Tuple.of(1, huge), Tuple.of(8, httpish));
  }

  @Provide
  Arbitrary<String> authorities() {
    Arbitrary<String> any = Arbitraries.strings().ofMaxLength(60);
    Arbitrary<String> shaped =
        Arbitraries.of(
                "[", "]", ":", "a", "9", ".", "-", "_", "0", "65535", "65536", "::1", "ä", " ", "%")
            .list()
            .ofMaxSize(12)
            .map(l -> String.join("", l));
    return Arbitraries.oneOf(any, shaped);
  }

  @Provide
  Arbitrary<byte[]> chunkedBodies() {
    Arbitrary<byte[]> noise = Arbitraries.bytes().array(byte[].class).ofMaxSize(2048);
    Arbitrary<byte[]> shaped =
        Arbitraries.of(
                "0", "1", "a", "F", "ffffffffffffffff", ";x", "\r\n", "\n", "\r", "abc", "X: y")
            .list()
            .ofMaxSize(200)
            .map(l -> ascii(String.join("", l)));
    return Arbitraries.oneOf(noise, shaped);
  }
}
