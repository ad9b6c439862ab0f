package io.agentnest.internal.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.net.URLEncoder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RedactorTest {
  static final String SECRET = "s3cr3t-Value/with+odd=chars";
  static final Redactor R = Redactor.of(Map.of("API_KEY", SECRET));

  static String redact(Redactor r, String text) {
    Map<String, Integer> counts = new HashMap<>();
    return r.redact(text, (k, v) -> counts.merge(k, v, Integer::sum));
  }

  static String streamed(Redactor r, byte[] data, int... cuts) {
    RedactingStream s = r.stream();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int prev = 0;
    for (int c : cuts) {
      out.writeBytes(s.feed(data, prev, c - prev));
      prev = c;
    }
    out.writeBytes(s.feed(data, prev, data.length - prev));
    out.writeBytes(s.finish());
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void masksTheSecretAndNamesTheRuleNotTheValue() {
    String out = redact(R, "key=" + SECRET + "!");
    assertThat(out).isEqualTo("key=[REDACTED:API_KEY]!");
  }

  @Test
  void leavesOrdinaryTextAlone() {
    String text = "hello world, nothing to see: s3cr3t-Valu (almost)";
    assertThat(redact(R, text)).isEqualTo(text);
  }

  @Test
  void secretSplitAtEveryOffsetOfTwoChunksIsMasked() {
    byte[] data = ("prefix " + SECRET + " suffix").getBytes(StandardCharsets.UTF_8);
    for (int cut = 0; cut <= data.length; cut++) {
      assertThat(streamed(R, data, cut))
          .as("cut at %d", cut)
          .isEqualTo("prefix [REDACTED:API_KEY] suffix");
    }
  }

  @Property(tries = 300)
  void secretSplitAnywhereInAnyTextIsMasked(
      @ForAll @StringLength(max = 40) String before,
      @ForAll @StringLength(max = 40) String after,
      @ForAll @IntRange(min = 0, max = 200) int cut1,
      @ForAll @IntRange(min = 0, max = 200) int cut2) {
    byte[] data = (before + SECRET + after).getBytes(StandardCharsets.UTF_8);
    int a = Math.min(cut1, data.length);
    int b = Math.min(Math.max(a, cut2), data.length);
    String out = streamed(R, data, a, b);
    assertThat(out).doesNotContain(SECRET).contains("[REDACTED:API_KEY]");
  }

  @Test
  void encodedFormsAreMasked() {
    String b64 = Base64.getEncoder().encodeToString(SECRET.getBytes(StandardCharsets.UTF_8));
    for (String prefix : new String[] {"", "x", "xy"}) {
      String enc =
          Base64.getEncoder()
              .encodeToString((prefix + SECRET + "tail").getBytes(StandardCharsets.UTF_8));
      assertThat(redact(R, "data: " + enc))
          .as("base64 aligned %d", prefix.length())
          .contains("[REDACTED:API_KEY]");
    }
    assertThat(redact(R, b64)).contains("[REDACTED:API_KEY]");
    String urlSafe = Base64.getUrlEncoder().encodeToString(SECRET.getBytes(StandardCharsets.UTF_8));
    assertThat(redact(R, urlSafe)).contains("[REDACTED:API_KEY]");
    String hex = HexFormat.of().formatHex(SECRET.getBytes(StandardCharsets.UTF_8));
    assertThat(redact(R, hex)).isEqualTo("[REDACTED:API_KEY]");
    assertThat(redact(R, hex.toUpperCase())).isEqualTo("[REDACTED:API_KEY]");
    String url = URLEncoder.encode(SECRET, StandardCharsets.UTF_8);
    assertThat(redact(R, "?k=" + url)).isEqualTo("?k=[REDACTED:API_KEY]");
    assertThat(redact(R, "?k=" + url.toLowerCase().replace("s3cr3t-value", "s3cr3t-Value")))
        .contains("[REDACTED:API_KEY]");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "glpat-abcdefghij0123456789",
        "xoxb-123456789012-abcdefghijkl",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "sk_live_abcdefghijklmnop1234",
      })
  void wellKnownCredentialShapesAreMasked(String token) {
    String out = redact(Redactor.defaults(), "token: " + token + " end");
    assertThat(out).doesNotContain(token).startsWith("token: [REDACTED:").endsWith("] end");
    byte[] data = ("token: " + token + " end").getBytes(StandardCharsets.UTF_8);
    for (int cut = 0; cut <= data.length; cut++) {
      assertThat(streamed(Redactor.defaults(), data, cut)).as("cut %d", cut).doesNotContain(token);
    }
  }

  @Test
  void bearerTokensAndUrlPasswordsKeepTheirContext() {
    assertThat(redact(Redactor.defaults(), "Authorization: Bearer abc.DEF-123_xyz456"))
        .isEqualTo("Authorization: Bearer [REDACTED:bearer-token]");
    assertThat(redact(Redactor.defaults(), "postgres://admin:hunter2pass@db:5432/x"))
        .isEqualTo("postgres://admin:[REDACTED:url-password]@db:5432/x");
    assertThat(redact(Redactor.defaults(), "see https://example.com/path"))
        .isEqualTo("see https://example.com/path");
  }

  @Test
  void privateKeyBlocksAreMaskedWhole() {
    String key =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAabc\ndef123==\n-----END RSA PRIVATE KEY-----";
    String out = redact(Redactor.defaults(), "x\n" + key + "\ny");
    assertThat(out).isEqualTo("x\n[REDACTED:private-key]\ny");
    String cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    assertThat(redact(Redactor.defaults(), cert)).isEqualTo(cert);
  }

  @Test
  void holdBackIsOnlyWhatCouldStillMatch() {
    RedactingStream s = R.stream();
    byte[] plain = "ordinary output line\n".getBytes(StandardCharsets.UTF_8);
    assertThat(s.feed(plain, 0, plain.length)).isEqualTo(plain);
    assertThat(s.held()).isZero();
    byte[] partial = "value s3cr3t".getBytes(StandardCharsets.UTF_8);
    byte[] out = s.feed(partial, 0, partial.length);
    assertThat(new String(out, StandardCharsets.UTF_8)).isEqualTo("value ");
    assertThat(s.held()).isEqualTo("s3cr3t".length());
    assertThat(new String(s.finish(), StandardCharsets.UTF_8)).isEqualTo("s3cr3t");
  }

  @Test
  void aSecretThatContainsAnotherIsMaskedWholeUnderItsOwnName() {
    Redactor r = Redactor.of(Map.of("SHORT", "abc-123-xyz", "LONG", "abc-123-xyz-and-more"));
    assertThat(redact(r, "[abc-123-xyz-and-more]")).isEqualTo("[[REDACTED:LONG]]");
    assertThat(redact(r, "[abc-123-xyz]")).isEqualTo("[[REDACTED:SHORT]]");
  }

  @Test
  void countsRedactionsByRule() {
    Map<String, Integer> counts = new HashMap<>();
    R.redact(
        SECRET + " and " + SECRET + " and AKIAIOSFODNN7EXAMPLE",
        (k, v) -> counts.merge(k, v, Integer::sum));
    assertThat(counts).containsEntry("API_KEY", 2).containsEntry("aws-access-key", 1);
  }

  // ---------------------------------------------------------------- base64 wrapped into lines

  @Provide
  Arbitrary<String> secrets() {
    return Arbitraries.strings()
        .withChars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_+/=.:!@#$%")
        .ofMinLength(4)
        .ofMaxLength(40);
  }

  /** What {@code od -An -tx1} prints: 16 bytes a line, each line starting with a space. */
  static String odDump(byte[] data) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < data.length; i++) {
      sb.append(' ').append(HexFormat.of().toHexDigits(data[i]));
      if (i % 16 == 15 || i == data.length - 1) {
        sb.append('\n');
      }
    }
    return sb.toString();
  }

  /**
   * Issue 42 (20): {@code od -An -tx1} of a file holding the secret, wherever the secret starts on
   * a line (so the dump wraps inside it) and wherever a streamed chunk ends.
   */
  @Property(tries = 60)
  void anOdHexDumpWrappedIntoLinesIsMaskedWhereverTheSecretStartsAndAChunkEnds(
      @ForAll("secrets") String secret,
      @ForAll @IntRange(min = 0, max = 15) int pad,
      @ForAll @IntRange(min = 0, max = 400) int cut1,
      @ForAll @IntRange(min = 0, max = 400) int cut2) {
    Redactor r = Redactor.of(Map.of("K", secret));
    String dump = odDump(("x".repeat(pad) + secret + "tail\n").getBytes(UTF8));
    assertThat(Leaks.hex(dump, secret)).as("the oracle sees the secret").isTrue();
    byte[] data = dump.getBytes(UTF8);
    int a = Math.min(cut1, data.length);
    int b = Math.min(Math.max(a, cut2), data.length);

    String out = streamed(r, data, a, b);

    assertThat(Leaks.hex(out, secret)).as("cuts %d, %d: %s", a, b, out).isFalse();
    assertThat(out).contains("[REDACTED:K]");
  }

  /** Issue 42 (20): hex with separators, as fingerprints and MAC-style dumps print it. */
  @Property(tries = 100)
  void hexWithSeparatorsInEitherCaseIsMasked(
      @ForAll("secrets") String secret,
      @ForAll @IntRange(min = 0, max = 3) int separator,
      @ForAll boolean upper,
      @ForAll @IntRange(min = 0, max = 300) int cut) {
    Redactor r = Redactor.of(Map.of("K", secret));
    String sep = new String[] {":", "-", " ", "\t"}[separator];
    StringBuilder hex = new StringBuilder();
    for (byte x : secret.getBytes(UTF8)) {
      if (hex.length() > 0) {
        hex.append(sep);
      }
      hex.append(HexFormat.of().toHexDigits(x));
    }
    String shown = upper ? hex.toString().toUpperCase(Locale.ROOT) : hex.toString();
    byte[] data = ("fingerprint=" + shown + "\n").getBytes(UTF8);

    String out = streamed(r, data, Math.min(cut, data.length));

    assertThat(Leaks.hex(out, secret)).as(out).isFalse();
    assertThat(out).startsWith("fingerprint=[REDACTED:K]");
  }

  @Test
  void hexDumpsOfOtherDataAndOrdinaryTextStayAsTheyAre() {
    String dump = odDump("hello world, nothing secret in here\n".getBytes(UTF8));
    assertThat(redact(R, dump)).isEqualTo(dump);
    String text = "12:30 - 4 apples - de:ad:be:ef - 0a-0b-0c";
    assertThat(redact(R, text)).isEqualTo(text);
  }

  @Property(tries = 40)
  void mimeWrappedBase64IsMaskedWhereverTheLineBreakFallsAndWhereverAChunkEnds(
      @ForAll("secrets") String secret,
      @ForAll @IntRange(min = 0, max = 2) int align,
      @ForAll boolean crlf) {
    Redactor r = Redactor.of(Map.of("K", secret));
    // 57 bytes before the secret: a full 76-column line of base64 precedes its encoding.
    String enc =
        Base64.getEncoder().encodeToString(("z".repeat(57 + align) + secret + "!").getBytes(UTF8));
    String nl = crlf ? "\r\n" : "\n";
    // Every offset of a line break inside the secret's encoding (the line before it is long, as
    // in any wrapped base64).
    for (int k = 76; k < enc.length(); k++) {
      String text = "data:\n" + enc.substring(0, k) + nl + enc.substring(k) + nl;
      byte[] data = text.getBytes(UTF8);
      assertThat(Leaks.base64(text, secret)).as("the oracle sees the secret").isTrue();
      // Every offset of a chunk boundary too.
      for (int cut = 0; cut <= data.length; cut++) {
        String out = streamed(r, data, cut);
        assertThat(Leaks.base64(out, secret))
            .as("break at %d, cut at %d: %s", k, cut, out)
            .isFalse();
      }
    }
  }

  @Property(tries = 10)
  void base64WrappedAt76ColumnsIsMaskedAtEveryPositionOfTheSecretOnTheLine(
      @ForAll("secrets") String secret) {
    Redactor r = Redactor.of(Map.of("K", secret));
    // 57 bytes are one 76-column line: every prefix length moves the secret across the break.
    for (int pad = 0; pad <= 57; pad++) {
      byte[] plain = ("x".repeat(pad) + secret + "y".repeat(10)).getBytes(UTF8);
      String mime = Base64.getMimeEncoder().encodeToString(plain); // 76 columns, CRLF
      String python = mime.replace("\r\n", "\n") + "\n"; // base64.encodebytes
      for (String text : new String[] {mime, python}) {
        assertThat(Leaks.base64(redact(r, text), secret)).as("pad %d: %s", pad, text).isFalse();
      }
    }
  }

  @Test
  void onlyALineBreakAfterALongBase64LineIsLookedThrough() {
    String enc = Base64.getEncoder().encodeToString(("z".repeat(57) + SECRET).getBytes(UTF8));
    String wrapped = enc.substring(0, 76) + "\r\n" + enc.substring(76);
    assertThat(redact(R, wrapped)).contains("[REDACTED:API_KEY]");
    // Three line-break bytes in a row, or a short line, are not a wrap.
    String three = enc.substring(0, 80) + "\n\n\n" + enc.substring(80);
    assertThat(redact(R, three)).isEqualTo(three);
    // And ordinary short lines are released at their newline, not held for the next line.
    RedactingStream s = R.stream();
    byte[] line = "two\n".getBytes(UTF8);
    assertThat(s.feed(line, 0, line.length)).isEqualTo(line);
  }

  // ---------------------------------------------------------------- four-character secrets

  /** Four characters, one of them outside the base64 alphabet: only base64 forms can match. */
  @Provide
  Arbitrary<String> fourChars() {
    Arbitrary<String> three = Arbitraries.strings().alpha().numeric().ofLength(3);
    Arbitrary<Character> odd = Arbitraries.of('!', '#', '%', '&', '*', '@', '~', '^');
    Arbitrary<Integer> at = Arbitraries.integers().between(0, 3);
    return Combinators.combine(three, odd, at)
        .as((t, c, i) -> t.substring(0, i) + c + t.substring(i));
  }

  @Property(tries = 150)
  void base64OfAFourCharacterSecretIsMaskedAtEveryAlignmentAndEveryCut(
      @ForAll("fourChars") String secret,
      @ForAll @Size(max = 5) byte[] before,
      @ForAll @Size(max = 5) byte[] after,
      @ForAll boolean urlSafe) {
    Redactor r = Redactor.of(Map.of("PIN", secret));
    byte[] s = secret.getBytes(UTF8);
    byte[] plain = new byte[before.length + s.length + after.length];
    System.arraycopy(before, 0, plain, 0, before.length);
    System.arraycopy(s, 0, plain, before.length, s.length);
    System.arraycopy(after, 0, plain, before.length + s.length, after.length);
    String enc = (urlSafe ? Base64.getUrlEncoder() : Base64.getEncoder()).encodeToString(plain);
    byte[] data = ("v=" + enc + ";").getBytes(UTF8);
    for (int cut = 0; cut <= data.length; cut++) {
      String out = streamed(r, data, cut);
      assertThat(Leaks.base64(out, secret)).as("cut %d: %s", cut, out).isFalse();
      assertThat(out).contains("[REDACTED:PIN]");
    }
  }

  @Property(tries = 100)
  void theFourCharacterFormsMatchOnlyTheSecretNotTextOneBitAway(
      @ForAll("fourChars") String secret,
      @ForAll @IntRange(min = 0, max = 31) int bit,
      @ForAll @IntRange(min = 0, max = 2) int align) {
    Redactor r = Redactor.secretsOnly(Map.of("PIN", secret));
    byte[] near = secret.getBytes(UTF8);
    near[bit / 8] ^= (byte) (1 << (bit % 8));
    byte[] plain = new byte[align + near.length + 2];
    System.arraycopy(near, 0, plain, align, near.length);
    String enc = Base64.getEncoder().encodeToString(plain);
    assertThat(redact(r, enc)).isEqualTo(enc);
  }

  private static final Charset UTF8 = StandardCharsets.UTF_8;
}
