package io.agentnest.text;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

/**
 * Neutralises a live byte stream from a sandbox before it reaches a terminal, so the program cannot
 * drive the terminal: no cursor movement or repainting (a forged approval question), no clipboard
 * writes (OSC 52), window titles, screen clearing, hidden text ({@code ESC[8m}), bidi reordering or
 * {@code \r} overwrites.
 *
 * <p>Newlines and tabs pass; {@code \r\n} and a lone {@code \r} become a newline; other C0 controls
 * are shown in caret notation ({@code ESC} as {@code ^[}, so {@code ESC[2J} prints as {@code
 * ^[[2J}), DEL as {@code ^?}, C1 controls and format characters (U+202E, zero-width, separators) as
 * {@code <U+202E>}, and bytes that are not UTF-8 as {@code <0x9B>} (a raw 0x9B is CSI to an 8-bit
 * terminal). Stateful: a UTF-8 sequence or {@code \r\n} split across chunks is handled as a whole.
 * One instance per stream; not thread-safe.
 */
public final class TerminalFilter {
  private final CharsetDecoder decoder =
      StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT);
  private byte[] carry = new byte[0];
  private boolean pendingCr;

  /** The bytes to show for this chunk (an incomplete UTF-8 sequence at its end waits). */
  public byte[] feed(byte[] data, int off, int len) {
    byte[] input = Arrays.copyOf(carry, carry.length + len);
    System.arraycopy(data, off, input, carry.length, len);
    return run(input, false);
  }

  /** The bytes still held back (an unfinished sequence, a trailing {@code \r}); call at the end. */
  public byte[] finish() {
    byte[] input = carry;
    return run(input, true);
  }

  private byte[] run(byte[] input, boolean end) {
    ByteBuffer in = ByteBuffer.wrap(input);
    CharBuffer chars = CharBuffer.allocate(input.length + 2);
    StringBuilder out = new StringBuilder(input.length + 16);
    decoder.reset();
    while (true) {
      CoderResult r = decoder.decode(in, chars, end);
      chars.flip();
      emitChars(chars, out);
      chars.clear();
      if (r.isError()) {
        for (int i = 0; i < r.length(); i++) {
          lineBreakIfCr(out);
          out.append(String.format(Locale.ROOT, "<0x%02X>", in.get() & 0xff));
        }
        continue;
      }
      break;
    }
    if (end) {
      decoder.flush(chars);
      chars.flip();
      emitChars(chars, out);
      lineBreakIfCr(out);
      carry = new byte[0];
    } else {
      carry = new byte[in.remaining()];
      in.get(carry);
    }
    return out.toString().getBytes(StandardCharsets.UTF_8);
  }

  private void emitChars(CharBuffer chars, StringBuilder out) {
    while (chars.hasRemaining()) {
      char c = chars.get();
      int cp = c;
      if (Character.isHighSurrogate(c) && chars.hasRemaining()) {
        char low = chars.get(chars.position());
        if (Character.isLowSurrogate(low)) {
          chars.get();
          cp = Character.toCodePoint(c, low);
        }
      }
      emit(cp, out);
    }
  }

  private void emit(int cp, StringBuilder out) {
    if (cp == '\r') {
      lineBreakIfCr(out);
      pendingCr = true;
      return;
    }
    if (cp == '\n') {
      pendingCr = false;
      out.append('\n');
      return;
    }
    lineBreakIfCr(out);
    if (cp == '\t' || !HumanText.isUnsafe(cp)) {
      out.appendCodePoint(cp);
    } else if (cp < 0x20) {
      out.append('^').append((char) (cp + 0x40));
    } else if (cp == 0x7f) {
      out.append("^?");
    } else {
      out.append('<').append(HumanText.codePointName(cp)).append('>');
    }
  }

  /** A {@code \r} not followed by {@code \n} would let later text overwrite the line. */
  private void lineBreakIfCr(StringBuilder out) {
    if (pendingCr) {
      pendingCr = false;
      out.append('\n');
    }
  }
}
