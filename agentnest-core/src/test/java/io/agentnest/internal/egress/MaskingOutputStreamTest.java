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

  /** Each secret in turn, leftmost non-overlapping occurrences, byte by byte. */
  private static String reference(String text) {
    char[] c = text.toCharArray();
    for (String s : SECRETS) {
      for (int i = 0; i + s.length() <= c.length; i++) {
        if (new String(c, i, s.length()).equals(s)) {
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
