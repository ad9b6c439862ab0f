package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.CharRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;

/** The skipping search masks exactly what a byte-by-byte search does, however writes are split. */
class MaskingOutputStreamTest {
  private static final List<String> SECRETS = List.of("abca", "bcabcab", "aaab");

  @Property(tries = 1000)
  void masksLikeTheByteByByteSearch(
      @ForAll @StringLength(max = 300) @CharRange(from = 'a', to = 'c') String text,
      @ForAll @IntRange(min = 1, max = 17) int cut)
      throws Exception {
    byte[] in = text.getBytes(StandardCharsets.ISO_8859_1);
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m =
        new MaskingOutputStream(
            sink, SECRETS.stream().map(s -> s.getBytes(StandardCharsets.ISO_8859_1)).toList());
    for (int i = 0; i < in.length; i += cut) {
      m.write(in, i, Math.min(cut, in.length - i));
    }
    m.finish();

    String out = sink.toString(StandardCharsets.ISO_8859_1);
    assertThat(out).hasSameSizeAs(text);
    for (String s : SECRETS) {
      assertThat(out).doesNotContain(s);
    }
    // Whole at once, the same as the reference on the whole text.
    byte[] whole =
        MaskingOutputStream.mask(
            in, SECRETS.stream().map(s -> s.getBytes(StandardCharsets.ISO_8859_1)).toList());
    assertThat(new String(whole, StandardCharsets.ISO_8859_1)).isEqualTo(reference(text));
  }

  private static final String LONG = "abcabbcacbbaccab";

  /**
   * However a body is split into writes, no piece of {@link MaskingOutputStream#PIECE} bytes of a
   * secret passes, and the body does not end in its first {@link MaskingOutputStream#MIN_TAIL} or
   * more bytes (an echo cut short); only masked bytes change.
   */
  @Property(tries = 1000)
  void noPieceOfALongSecretPassesHoweverTheWritesAreSplit(
      @ForAll @StringLength(max = 300) @CharRange(from = 'a', to = 'c') String text,
      @ForAll @IntRange(min = 1, max = 23) int cut)
      throws Exception {
    byte[] in = text.getBytes(StandardCharsets.ISO_8859_1);
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m =
        new MaskingOutputStream(sink, List.of(LONG.getBytes(StandardCharsets.ISO_8859_1)));
    for (int i = 0; i < in.length; i += cut) {
      m.write(in, i, Math.min(cut, in.length - i));
    }
    m.finish();

    String out = sink.toString(StandardCharsets.ISO_8859_1);
    assertThat(out).hasSameSizeAs(text);
    for (int i = 0; i < out.length(); i++) {
      assertThat(out.charAt(i)).isIn(text.charAt(i), '*');
    }
    for (int i = 0; i + MaskingOutputStream.PIECE <= LONG.length(); i++) {
      assertThat(out).doesNotContain(LONG.substring(i, i + MaskingOutputStream.PIECE));
    }
    for (int k = MaskingOutputStream.MIN_TAIL; k < LONG.length(); k++) {
      assertThat(out).doesNotEndWith(LONG.substring(0, k));
    }
  }

  /**
   * Each secret in turn, its leftmost non-overlapping occurrences in the text as received (a mask
   * of one secret does not hide another's occurrence), byte by byte.
   */
  private static String reference(String text) {
    char[] c = text.toCharArray();
    for (String s : SECRETS) {
      for (int i = 0; i + s.length() <= c.length; i++) {
        if (text.substring(i, i + s.length()).equals(s)) {
          for (int k = 0; k < s.length(); k++) {
            c[i + k] = '*';
          }
          i += s.length() - 1;
        }
      }
    }
    return new String(c);
  }
}
