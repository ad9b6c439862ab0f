package io.agentnest.text;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Text that a sandbox (or anything else untrusted) controls, made safe for a person to read on a
 * terminal, in an MCP client's question or on a web page: every character that could move the
 * cursor, recolour, hide or reorder what follows is shown as an escape instead of acting.
 *
 * <p>Escaped: C0 and C1 controls and DEL (so ESC, CSI, OSC, BEL, {@code \r}, backspace), format
 * characters (bidi overrides and isolates such as U+202E, zero-width characters, BOM), line and
 * paragraph separators, and unpaired surrogates; also the backslash itself, so the escaped form is
 * unambiguous: a doubled backslash, {@code \n}, {@code \r}, {@code \t}, {@code \xHH}, &#92;uHHHH
 * and {@code \U00HHHHHH} (Python's spelling). Everything else, any script and emoji included, is
 * unchanged.
 */
public final class HumanText {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private HumanText() {}

  /**
   * Whether showing this code point raw could change how the text around it is shown: controls,
   * format characters (bidi, zero-width), line/paragraph separators and lone surrogates.
   */
  public static boolean isUnsafe(int codePoint) {
    int type = Character.getType(codePoint);
    return type == Character.CONTROL
        || type == Character.FORMAT
        || type == Character.LINE_SEPARATOR
        || type == Character.PARAGRAPH_SEPARATOR
        || type == Character.SURROGATE;
  }

  /** One line for a person: newlines and tabs are escaped too. */
  public static String line(CharSequence s) {
    return escape(s, s.length(), false);
  }

  /** One line of at most {@code maxCodePoints} source characters, then {@code ...}. */
  public static String line(CharSequence s, int maxCodePoints) {
    if (maxCodePoints < 0) {
      throw new IllegalArgumentException("maxCodePoints must be >= 0, got " + maxCodePoints);
    }
    String str = s.toString();
    if (str.codePointCount(0, str.length()) <= maxCodePoints) {
      return escape(str, str.length(), false);
    }
    return escape(str, str.offsetByCodePoints(0, maxCodePoints), false) + "...";
  }

  /** Several lines for a person: like {@link #line(CharSequence)} but keeps newlines and tabs. */
  public static String text(CharSequence s) {
    return escape(s, s.length(), true);
  }

  /**
   * Bytes that should be UTF-8, as one line; bytes that are not valid UTF-8 become {@code \xHH}.
   */
  public static String line(byte[] utf8) {
    CharsetDecoder decoder =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(utf8);
    CharBuffer chars = CharBuffer.allocate(utf8.length + 1);
    StringBuilder out = new StringBuilder(utf8.length + 16);
    while (true) {
      CoderResult r = decoder.decode(in, chars, true);
      chars.flip();
      out.append(line(chars));
      chars.clear();
      if (r.isError()) {
        for (int i = 0; i < r.length(); i++) {
          hex(out, 'x', in.get() & 0xff, 2);
        }
        continue;
      }
      if (r.isUnderflow()) {
        break;
      }
    }
    return out.toString();
  }

  private static String escape(CharSequence whole, int end, boolean keepLines) {
    CharSequence s = end == whole.length() ? whole : whole.subSequence(0, end);
    StringBuilder out = null;
    int i = 0;
    while (i < end) {
      int cp = Character.codePointAt(s, i);
      int n = Character.charCount(cp);
      boolean keep = cp != '\\' && (!isUnsafe(cp) || (keepLines && (cp == '\n' || cp == '\t')));
      if (keep) {
        if (out != null) {
          out.appendCodePoint(cp);
        }
      } else {
        if (out == null) {
          out = new StringBuilder(end + 16);
          out.append(s, 0, i);
        }
        escapeOne(out, cp);
      }
      i += n;
    }
    return out == null ? s.toString() : out.toString();
  }

  private static void escapeOne(StringBuilder out, int cp) {
    switch (cp) {
      case '\\' -> out.append("\\\\");
      case '\n' -> out.append("\\n");
      case '\r' -> out.append("\\r");
      case '\t' -> out.append("\\t");
      default -> {
        if (cp < 0x100) {
          hex(out, 'x', cp, 2);
        } else if (cp < 0x10000) {
          hex(out, 'u', cp, 4);
        } else {
          hex(out, 'U', cp, 8);
        }
      }
    }
  }

  private static void hex(StringBuilder out, char kind, int value, int digits) {
    out.append('\\').append(kind);
    for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
      out.append(HEX[(value >>> shift) & 0xf]);
    }
  }

  /** {@code U+202E}-style name of a code point, for messages. */
  static String codePointName(int cp) {
    return String.format(Locale.ROOT, "U+%04X", cp);
  }
}
