package io.agentnest.text;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class TerminalFilterTest {

  /** Escape sequences, C1 controls (encoded and raw), bidi overrides, broken UTF-8, plain text. */
  @Provide
  Arbitrary<byte[]> hostileOutput() {
    Arbitrary<String> pieces =
        Arbitraries.of(
            "\u001b[2J",
            "\u001b[1A",
            "\u001b[2K",
            "\u001b]52;c;ZWNobyBoaQ==\u0007",
            "\u001b]0;title\u001b\\",
            "\u001b[8m",
            "\u009b31m",
            "\r",
            "\r\n",
            "\n",
            "\t",
            "\b",
            "\u202e",
            "\u2066",
            "\u2028",
            "allow? [y]es",
            "pypi.org",
            "Grüße 中文 🚀",
            "\u007f");
    Arbitrary<byte[]> text =
        pieces.list().ofMaxSize(20).map(l -> String.join("", l).getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> raw =
        Arbitraries.of(
            new byte[] {(byte) 0x9b},
            new byte[] {(byte) 0xc2},
            new byte[] {(byte) 0xe2, (byte) 0x80},
            new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
            new byte[] {(byte) 0xf0, (byte) 0x9f},
            new byte[] {(byte) 0xff});
    Arbitrary<byte[]> any = Arbitraries.bytes().array(byte[].class).ofMaxSize(40);
    return Arbitraries.oneOf(text, raw, any).list().ofMaxSize(8).map(TerminalFilterTest::concat);
  }

  @Property
  void nothingThatDrivesATerminalGetsThrough(@ForAll("hostileOutput") byte[] data) {
    byte[] out = filterInChunks(data, 3);
    String shown = decodeStrict(out);
    shown
        .codePoints()
        .filter(cp -> cp != '\n' && cp != '\t')
        .forEach(cp -> assertThat(HumanText.isUnsafe(cp)).as("U+%04X", cp).isFalse());
  }

  @Property
  void howTheStreamIsChunkedDoesNotChangeWhatIsShown(
      @ForAll("hostileOutput") byte[] data, @ForAll @IntRange(min = 1, max = 7) int chunk) {
    assertThat(filterInChunks(data, chunk)).isEqualTo(filterInChunks(data, Integer.MAX_VALUE));
  }

  @Property
  void ordinaryOutputPassesUnchanged(@ForAll("plain") String s) {
    byte[] in = s.getBytes(StandardCharsets.UTF_8);
    assertThat(filterInChunks(in, 5)).isEqualTo(in);
  }

  @Provide
  Arbitrary<String> plain() {
    return Arbitraries.strings()
        .withChars("abc xyz_-=/:.\n\tÄé中🚀")
        .ofMaxLength(80)
        .filter(s -> !s.isEmpty());
  }

  @Test
  void sequencesAreShownInCaretNotation() {
    assertThat(show("\u001b[2J\u001b[1Aallow github.com? "))
        .isEqualTo("^[[2J^[[1Aallow github.com? ");
    assertThat(show("\u001b]52;c;aGk=\u0007")).isEqualTo("^[]52;c;aGk=^G");
    assertThat(show("100%\rdone\r\n")).isEqualTo("100%\ndone\n");
    assertThat(show("a\u009b2Jb\u202ec\u007f")).isEqualTo("a<U+009B>2Jb<U+202E>c^?");
    assertThat(
            new String(
                filterInChunks(new byte[] {'a', (byte) 0x9b, 'b'}, 1), StandardCharsets.UTF_8))
        .isEqualTo("a<0x9B>b");
  }

  @Test
  void aTrailingCarriageReturnOrBrokenSequenceComesOutAtTheEnd() {
    TerminalFilter f = new TerminalFilter();
    assertThat(f.feed(new byte[] {'x', '\r'}, 0, 2)).isEqualTo(new byte[] {'x'});
    assertThat(f.feed(new byte[] {(byte) 0xe4, (byte) 0xb8}, 0, 2)).isEmpty();
    assertThat(new String(f.finish(), StandardCharsets.UTF_8)).isEqualTo("\n<0xE4><0xB8>");
  }

  private static String show(String s) {
    return new String(
        filterInChunks(s.getBytes(StandardCharsets.UTF_8), 2), StandardCharsets.UTF_8);
  }

  private static byte[] filterInChunks(byte[] data, int chunk) {
    TerminalFilter f = new TerminalFilter();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = 0; i < data.length; i += chunk) {
      int n = Math.min(chunk, data.length - i);
      out.writeBytes(f.feed(data, i, n));
    }
    out.writeBytes(f.finish());
    return out.toByteArray();
  }

  private static String decodeStrict(byte[] b) {
    try {
      return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(b)).toString();
    } catch (CharacterCodingException e) {
      throw new AssertionError("the filter wrote bytes that are not UTF-8", e);
    }
  }

  private static byte[] concat(List<byte[]> parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    parts.forEach(out::writeBytes);
    return out.toByteArray();
  }
}
