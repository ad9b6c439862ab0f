package io.agentnest.text;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class HumanTextTest {

  /** Characters a hostile sandbox would reach for, mixed with ordinary text. */
  @Provide
  Arbitrary<String> hostile() {
    Arbitrary<Character> nasty =
        Arbitraries.of(
            '\u001b', '\r', '\n', '\t', '\b', '\u0007', '\u0000', '\u007f', '\u0085', '\u009b',
            '\u009d', '\u202e', '\u202d', '\u2066', '\u2069', '\u200e', '\u200b', '\u2028',
            '\u2029', '\ufeff', '\u061c', '\ud800', '\udfff', '\\', 'x', 'u', '[', ']', ';', '8',
            'm', 'a', '\u00e9', '\u4e2d');
    Arbitrary<String> mixed = nasty.list().ofMaxSize(60).map(HumanTextTest::join);
    return Arbitraries.oneOf(mixed, Arbitraries.strings().all().ofMaxLength(60));
  }

  @Property
  void escapedLinesContainNothingThatActsOnATerminalOrAView(@ForAll("hostile") String s) {
    String out = HumanText.line(s);
    out.codePoints().forEach(cp -> assertThat(HumanText.isUnsafe(cp)).as("U+%04X", cp).isFalse());
  }

  @Property
  void escapingIsReversibleSoTwoTargetsNeverLookAlike(@ForAll("hostile") String s) {
    assertThat(unescape(HumanText.line(s))).isEqualTo(s);
  }

  @Property
  void multiLineTextKeepsOnlyNewlinesAndTabs(@ForAll("hostile") String s) {
    String out = HumanText.text(s);
    out.codePoints()
        .filter(cp -> cp != '\n' && cp != '\t')
        .forEach(cp -> assertThat(HumanText.isUnsafe(cp)).as("U+%04X", cp).isFalse());
    assertThat(out.chars().filter(c -> c == '\n').count())
        .isEqualTo(s.chars().filter(c -> c == '\n').count());
  }

  @Property
  void arbitraryBytesIncludingInvalidUtf8BecomeSafeText(@ForAll byte[] bytes) {
    String out = HumanText.line(bytes);
    out.codePoints().forEach(cp -> assertThat(HumanText.isUnsafe(cp)).as("U+%04X", cp).isFalse());
  }

  @Property
  void validUtf8BytesReadTheSameAsTheirString(@ForAll("hostile") String s) {
    String wellFormed = s.replaceAll("[\\ud800-\\udfff]", "?");
    assertThat(HumanText.line(wellFormed.getBytes(StandardCharsets.UTF_8)))
        .isEqualTo(HumanText.line(wellFormed));
  }

  @Property
  void clippedLinesKeepAtMostTheRequestedCharacters(@ForAll("hostile") String s) {
    String out = HumanText.line(s, 10);
    if (s.codePointCount(0, s.length()) <= 10) {
      assertThat(out).isEqualTo(HumanText.line(s));
    } else {
      assertThat(out).endsWith("...");
      String body = out.substring(0, out.length() - 3);
      assertThat(unescape(body).codePointCount(0, unescape(body).length())).isEqualTo(10);
    }
  }

  @Test
  void ordinaryTextIsUnchanged() {
    for (String s :
        new String[] {"api.example.com:443", "/workspace/data.csv", "Grüße 中文 🚀", "a b"}) {
      assertThat(HumanText.line(s)).isSameAs(s);
    }
  }

  @Test
  void spoofingSequencesAreShownNotActedOn() {
    assertThat(HumanText.line("evil.example\u001b[1A\r\u001b[2Kallowed.example"))
        .isEqualTo("evil.example\\x1b[1A\\r\\x1b[2Kallowed.example");
    assertThat(HumanText.line("\u001b]52;c;ZWNobyBoaQ==\u0007"))
        .isEqualTo("\\x1b]52;c;ZWNobyBoaQ==\\x07");
    assertThat(HumanText.line("\u001b[8m")).isEqualTo("\\x1b[8m");
    assertThat(HumanText.line("\u009b2J")).isEqualTo("\\x9b2J");
    assertThat(HumanText.line("exe.\u202etxt")).isEqualTo("exe.\\u202etxt");
    assertThat(HumanText.line("a\\x1b")).isEqualTo("a\\\\x1b");
    assertThat(HumanText.line("\ud800x")).isEqualTo("\\ud800x");
    assertThat(HumanText.line("\udb40\udc01")).isEqualTo("\\U000e0001");
    assertThat(HumanText.line(new byte[] {'a', (byte) 0x9b, (byte) 0xc2, (byte) 0x9b}))
        .isEqualTo("a\\x9b\\x9b");
  }

  private static String join(List<Character> cs) {
    StringBuilder sb = new StringBuilder();
    cs.forEach(sb::append);
    return sb.toString();
  }

  /** The inverse of {@link HumanText#line(CharSequence)}, as a reader would decode it. */
  static String unescape(String s) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char k = s.charAt(++i);
      switch (k) {
        case '\\' -> out.append('\\');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'x' -> {
          out.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
          i += 2;
        }
        case 'u' -> {
          out.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
          i += 4;
        }
        case 'U' -> {
          out.appendCodePoint(Integer.parseInt(s.substring(i + 1, i + 9), 16));
          i += 8;
        }
        default -> throw new AssertionError("unknown escape \\" + k + " in " + s);
      }
    }
    return out.toString();
  }

  /** Issue 42 (14): every bidi control the issue names is shown escaped, never acting. */
  @Test
  void everyBidiControlIsShownEscaped() {
    assertThat(HumanText.line("\u202e/etats-lla/")).isEqualTo("\\u202e/etats-lla/");
    String all = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c";
    assertThat(HumanText.line(all))
        .isEqualTo(
            "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e"
                + "\\u200f\\u061c");
    assertThat(HumanText.text(all)).isEqualTo(HumanText.line(all));
  }
}
