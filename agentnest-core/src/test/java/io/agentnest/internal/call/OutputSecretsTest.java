package io.agentnest.internal.call;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecResult;
import io.agentnest.OutputChunk;
import io.agentnest.RichOutput;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Json;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * A secret printed partly to stdout and partly to stderr, and secrets in binary rich outputs: what
 * leaves the collector must not give the secret away in any text a reader sees (each stream, the
 * streams merged in delivery order, one stream's collected text read right after the other's).
 */
class OutputSecretsTest {
  private static Frame out(boolean stderr, String text) {
    return new Frame(
        Json.object().put(Ops.EV, Ops.EV_OUT).put("id", 1).put("s", stderr ? "e" : "o"),
        text.getBytes(StandardCharsets.UTF_8));
  }

  private static Frame rich(String mime, byte[] data) {
    ObjectNode h = Json.object().put(Ops.EV, Ops.EV_RICH).put("id", 1).put("mime", mime);
    return new Frame(h, data);
  }

  /** What a reader can see: the merged stream as delivered, and the result's two texts. */
  private record Seen(String merged, ExecResult result) {
    List<String> texts() {
      String o = result.stdout();
      String e = result.stderr();
      return List.of(merged, o, e, o + e, e + o);
    }
  }

  private static Seen run(String secret, List<Frame> frames) {
    ByteArrayOutputStream merged = new ByteArrayOutputStream();
    OutputCollector c =
        new OutputCollector(
            1 << 20,
            chunk -> merged.writeBytes(chunk.data()),
            Redactor.of(Map.of("TOKEN", secret)),
            null);
    frames.forEach(c);
    ExecResult r = c.toResult(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", 1), false);
    return new Seen(merged.toString(StandardCharsets.UTF_8), r);
  }

  @Provide
  Arbitrary<String> secrets() {
    return Arbitraries.strings()
        .withChars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        .ofMinLength(4)
        .ofMaxLength(30);
  }

  @Provide
  Arbitrary<String> filler() {
    return Arbitraries.strings().withChars("abc xyz.\n").ofMaxLength(12);
  }

  @Property(tries = 150)
  void aSecretSplitBetweenStdoutAndStderrAtEveryOffsetIsMaskedInEveryViewOfTheStreams(
      @ForAll("secrets") String secret,
      @ForAll("filler") String before,
      @ForAll("filler") String after,
      @ForAll boolean firstOnStderr) {
    for (int k = 1; k < secret.length(); k++) {
      String head = before + secret.substring(0, k);
      String tail = secret.substring(k) + after;
      boolean a = firstOnStderr;
      // The ways a program can order the halves and what flushes them.
      List<List<Frame>> orders =
          List.of(
              List.of(out(a, head), out(!a, tail)),
              List.of(out(!a, tail), out(a, head)),
              List.of(out(a, head), out(!a, tail), out(a, "\n"), out(!a, "\n")),
              List.of(out(a, head), out(!a, tail), out(!a, "\n"), out(a, "\n")),
              List.of(out(a, head), out(a, "\u001b[0m"), out(!a, tail)));
      for (int o = 0; o < orders.size(); o++) {
        Seen seen = run(secret, orders.get(o));
        for (String text : seen.texts()) {
          assertThat(text).as("split at %d, order %d", k, o).doesNotContain(secret);
        }
      }
    }
  }

  @Test
  void halvesBothHeldBackUntilTheEndAreMaskedWhenReleasedTogether() {
    // Each half is a prefix of the secret, so each stream holds its half back to the end, then
    // releases stdout's and stderr's in a row: the merged text must not read as the secret.
    String secret = "abcabcab";
    Seen seen = run(secret, List.of(out(false, "abc"), out(true, "abcab")));
    assertThat(seen.merged()).doesNotContain(secret).contains("[REDACTED:TOKEN]");
    assertThat(seen.result().stdout()).isEqualTo("[REDACTED:TOKEN]");
    assertThat(seen.result().stderr()).isEqualTo("[REDACTED:TOKEN]");
  }

  @Test
  void theTailOfStdoutAndTheHeadOfStderrAreMaskedInTheResult() {
    String secret = "tok-9f8e7d6c5b4a39281706";
    Seen seen = run(secret, List.of(out(true, "e7d6c5b4a39281706 done\n"), out(false, "tok-9f8")));
    assertThat(seen.result().stdout()).isEqualTo("[REDACTED:TOKEN]");
    assertThat(seen.result().stderr()).isEqualTo("[REDACTED:TOKEN] done\n");
    assertThat(seen.result().redactions()).containsEntry("TOKEN", 1);
  }

  @Test
  void streamsWithoutSecretsAreDeliveredUnchangedAndInOrder() {
    List<OutputChunk> chunks = new ArrayList<>();
    OutputCollector c =
        new OutputCollector(1 << 20, chunks::add, Redactor.of(Map.of("TOKEN", "hunter22")), null);
    c.accept(out(false, "one\n"));
    c.accept(out(true, "two\n"));
    c.accept(out(false, "three\n"));
    ExecResult r = c.toResult(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", 1), false);
    assertThat(chunks).extracting(OutputChunk::text).containsExactly("one\n", "two\n", "three\n");
    assertThat(r.stdout()).isEqualTo("one\nthree\n");
    assertThat(r.stderr()).isEqualTo("two\n");
    assertThat(r.redactions()).isEmpty();
  }

  // ---------------------------------------------------------------- rich outputs

  private static ExecResult withRich(String secret, String mime, byte[] data) {
    OutputCollector c =
        new OutputCollector(1 << 20, null, Redactor.of(Map.of("TOKEN", secret)), null);
    c.accept(rich(mime, data));
    return c.toResult(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", 1), true);
  }

  private static byte[] pngWith(String text) {
    byte[] head = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
    byte[] t = text.getBytes(StandardCharsets.ISO_8859_1);
    byte[] all = new byte[head.length + t.length + 4];
    System.arraycopy(head, 0, all, 0, head.length);
    System.arraycopy(t, 0, all, head.length, t.length);
    return all;
  }

  @Test
  void aBinaryRichOutputHoldingASecretInAnyFormIsWithheld() {
    String secret = "s3cr3t-Value/with+odd";
    byte[] raw = secret.getBytes(StandardCharsets.UTF_8);
    for (String form :
        List.of(
            "tEXt" + secret,
            "tEXt"
                + Base64.getEncoder()
                    .encodeToString(("x" + secret).getBytes(StandardCharsets.UTF_8)),
            "tEXt" + HexFormat.of().formatHex(raw))) {
      ExecResult r = withRich(secret, "image/png", pngWith(form));
      assertThat(r.rich()).hasSize(1);
      RichOutput ro = r.rich().get(0);
      assertThat(ro.mimeType()).isEqualTo("text/plain");
      String note = new String(ro.data(), StandardCharsets.UTF_8);
      assertThat(note).startsWith("[REDACTED:TOKEN]").contains("image/png").doesNotContain(secret);
      assertThat(r.redactions()).containsEntry("TOKEN", 1);
    }
  }

  @Test
  void aBinaryRichOutputWithACredentialShapeIsWithheld() {
    ExecResult r = withRich("unrelated-secret", "image/jpeg", pngWith("AKIAIOSFODNN7EXAMPLE "));
    assertThat(r.rich().get(0).mimeType()).isEqualTo("text/plain");
    assertThat(r.redactions()).containsEntry("aws-access-key", 1);
  }

  @Test
  void aCleanBinaryRichOutputIsKeptByteForByte() {
    byte[] png = pngWith("IHDR nothing here");
    ExecResult r = withRich("s3cr3t-Value", "image/png", png);
    assertThat(r.rich().get(0).mimeType()).isEqualTo("image/png");
    assertThat(r.rich().get(0).data()).isEqualTo(png);
    assertThat(r.redactions()).isEmpty();
  }

  @Test
  void aSecretInTheMimeTypeIsMasked() {
    ExecResult r = withRich("s3cr3t-Value", "image/s3cr3t-Value", new byte[] {1, 2});
    assertThat(r.rich().get(0).mimeType()).isEqualTo("image/[REDACTED:TOKEN]");
  }
}
