package io.agentnest.internal.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
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
  void countsRedactionsByRule() {
    Map<String, Integer> counts = new HashMap<>();
    R.redact(
        SECRET + " and " + SECRET + " and AKIAIOSFODNN7EXAMPLE",
        (k, v) -> counts.merge(k, v, Integer::sum));
    assertThat(counts).containsEntry("API_KEY", 2).containsEntry("aws-access-key", 1);
  }
}
