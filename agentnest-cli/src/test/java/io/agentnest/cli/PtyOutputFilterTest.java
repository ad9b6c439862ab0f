package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class PtyOutputFilterTest {
  private static String through(String sandboxPrinted) {
    return through(sandboxPrinted.getBytes(StandardCharsets.UTF_8), 1 << 20);
  }

  /** Fed in chunks of {@code chunk} bytes: a sequence split anywhere comes out the same. */
  private static String through(byte[] data, int chunk) {
    PtyOutputFilter f = new PtyOutputFilter();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int off = 0; off < data.length; off += chunk) {
      out.writeBytes(f.feed(data, off, Math.min(chunk, data.length - off)));
    }
    out.writeBytes(f.finish());
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void whatAScreenNeedsPassesUnchanged() {
    String screen =
        "\u001b[H\u001b[2J\u001b[1;31mred\u001b[0m\r\n\u001b[?25l\u001b[10;5H\u001b[K"
            + "\u001b7\u001b8\u001bM\u001b(0qqq\u001b(B\u001b[?1049h\u001b[?2004h\b\t\u0007é€";
    assertThat(through(screen)).isEqualTo(screen);
  }

  @Test
  void clipboardTitleAndHyperlinkStringsAreShownNotObeyed() {
    assertThat(through("a\u001b]52;c;aGk=\u0007b")).isEqualTo("a^[]52;c;aGk=^Gb");
    assertThat(through("\u001b]0;pwned\u001b\\x")).isEqualTo("^[]0;pwned^[\\x");
    assertThat(through("\u001b]8;;https://example.com\u0007link\u001b]8;;\u0007"))
        .isEqualTo("^[]8;;https://example.com^Glink^[]8;;^G");
    assertThat(through("\u001bPtmux;\u001b\u001b]52;c;x\u0007\u001b\\")).doesNotContain("\u001b");
    assertThat(through("\u001b_apc\u001b\\\u001b^pm\u001b\\\u001bXsos\u001b\\"))
        .doesNotContain("\u001b");
  }

  @Test
  void windowManipulationAndC1AndShiftsAreShown() {
    assertThat(through("\u001b[8;100;200t\u001b[21t")).isEqualTo("^[[8;100;200t^[[21t");
    assertThat(through("x\u009b31my")).isEqualTo("x<U+009B>31my");
    assertThat(through("\u000e\u000f\u0000\u007f")).isEqualTo("^N^O^@^?");
  }

  @Test
  void aSequenceSplitAcrossChunksIsJudgedWhole() {
    byte[] data =
        "ok\u001b[31mred\u001b]52;c;aGk=\u0007\u001b[3;4t\u009bz".getBytes(StandardCharsets.UTF_8);
    String whole = through(data, data.length);
    for (int chunk = 1; chunk < 8; chunk++) {
      assertThat(through(data, chunk)).as("chunks of %d", chunk).isEqualTo(whole);
    }
    assertThat(whole).isEqualTo("ok\u001b[31mred^[]52;c;aGk=^G^[[3;4t<U+009B>z");
  }

  @Test
  void anEndlessOrBrokenSequenceIsShownAndTheStreamGoesOn() {
    String endless = "\u001b[" + "1;".repeat(100) + "m after";
    assertThat(through(endless)).startsWith("^[[1;1;").endsWith("m after").doesNotContain("\u001b");
    assertThat(through("\u001b[31\nnext")).isEqualTo("^[[31\nnext");
    assertThat(through("tail\u001b[")).isEqualTo("tail^[[");
  }
}
