package io.agentnest.cli;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * What {@code agentnest shell} lets through from the sandbox's pty to the person's terminal. A
 * shell, an editor or {@code top} needs cursor movement, erasing, colours and line drawing, so
 * those pass (unlike {@code run}'s {@link io.agentnest.text.TerminalFilter}, which shows
 * everything). What reaches beyond the screen is shown in caret notation instead of acting: OSC
 * (clipboard writes with OSC 52, titles, hyperlinks, colour changes, iTerm2's file transfer), DCS,
 * APC, PM and SOS strings (terminal-specific commands, tmux pass-through), window manipulation
 * ({@code CSI ... t}), C1 controls sent as UTF-8, charset shifts (SO/SI) and other C0 controls a
 * screen does not use. Stateful across chunks; one instance per stream, not thread-safe.
 */
final class PtyOutputFilter {
  /** A CSI or escape sequence longer than this is not a real one: shown, not obeyed. */
  static final int MAX_SEQUENCE = 64;

  private enum State {
    GROUND,
    ESC, // after ESC: deciding which kind
    SEQUENCE, // a CSI or ESC-intermediate sequence, buffered until its final byte
    STRING, // an OSC/DCS/APC/PM/SOS body, shown
    STRING_ESC, // ESC inside a string: ST (ESC \) or the start of something else
    C2 // a UTF-8 lead byte 0xC2: C1 controls are C2 80..C2 9F
  }

  private State state = State.GROUND;
  private boolean csi;
  private final ByteArrayOutputStream seq = new ByteArrayOutputStream();

  byte[] feed(byte[] data, int off, int len) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(len + 16);
    for (int i = off; i < off + len; i++) {
      step(data[i] & 0xff, out);
    }
    return out.toByteArray();
  }

  /** What a sequence left open at the end holds, shown. */
  byte[] finish() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (state == State.SEQUENCE || state == State.ESC) {
      showSequence(out);
    } else if (state == State.C2) {
      out.write(0xC2);
    }
    state = State.GROUND;
    return out.toByteArray();
  }

  private void step(int b, ByteArrayOutputStream out) {
    switch (state) {
      case GROUND -> ground(b, out);
      case C2 -> {
        state = State.GROUND;
        if (b >= 0x80 && b <= 0x9F) {
          text(out, String.format("<U+%04X>", b));
        } else {
          out.write(0xC2);
          ground(b, out);
        }
      }
      case ESC -> {
        if (b == '[' || (b >= 0x20 && b <= 0x2F)) {
          csi = b == '[';
          seq.write(b);
          state = State.SEQUENCE;
        } else if (b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X') {
          seq.write(b);
          showSequence(out); // the introducer, shown; the body follows as text
          state = State.STRING;
        } else if (b >= 0x30 && b <= 0x7E && b != '\\') {
          seq.write(b);
          passSequence(out); // ESC 7, ESC 8, ESC M, ESC =, ESC c, ...
        } else if (b == '\\') {
          seq.write(b);
          showSequence(out); // a string terminator with no string open
          state = State.GROUND;
        } else {
          showSequence(out);
          state = State.GROUND;
          ground(b, out);
        }
      }
      case SEQUENCE -> {
        if (b < 0x20 || b > 0x7E) {
          showSequence(out);
          state = State.GROUND;
          ground(b, out);
        } else {
          seq.write(b);
          if (csi ? b >= 0x40 : b >= 0x30) {
            if (csi && b == 't') {
              showSequence(out); // window manipulation: move, resize, iconify, report
              state = State.GROUND;
            } else {
              passSequence(out);
            }
          } else if (seq.size() > MAX_SEQUENCE) {
            showSequence(out);
            state = State.GROUND;
          }
        }
      }
      case STRING -> {
        if (b == 0x1B) {
          state = State.STRING_ESC;
        } else if (b == 0x07) {
          text(out, "^G");
          state = State.GROUND;
        } else if (b == 0x18 || b == 0x1A) {
          caret(b, out);
          state = State.GROUND;
        } else if (b < 0x20 || b == 0x7F) {
          caret(b, out);
        } else {
          out.write(b);
        }
      }
      case STRING_ESC -> {
        text(out, "^[");
        if (b == '\\') {
          out.write(b);
          state = State.GROUND;
        } else {
          state = State.GROUND;
          step(b, out);
        }
      }
    }
  }

  private void ground(int b, ByteArrayOutputStream out) {
    if (b == 0x1B) {
      seq.reset();
      seq.write(b);
      state = State.ESC;
    } else if (b == 0xC2) {
      state = State.C2;
    } else if (b >= 0x20 && b != 0x7F) {
      out.write(b);
    } else if (b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == 0x07 || b == 0x0B
        || b == 0x0C) {
      out.write(b);
    } else {
      caret(b, out);
    }
  }

  private void passSequence(ByteArrayOutputStream out) {
    out.writeBytes(seq.toByteArray());
    seq.reset();
    state = State.GROUND;
  }

  /** The buffered sequence as text: ESC as ^[, other controls in caret notation. */
  private void showSequence(ByteArrayOutputStream out) {
    for (byte x : seq.toByteArray()) {
      int c = x & 0xff;
      if (c < 0x20 || c == 0x7F) {
        caret(c, out);
      } else {
        out.write(c);
      }
    }
    seq.reset();
  }

  private static void caret(int c, ByteArrayOutputStream out) {
    text(out, c == 0x7F ? "^?" : "^" + (char) (c + 0x40));
  }

  private static void text(ByteArrayOutputStream out, String s) {
    out.writeBytes(s.getBytes(StandardCharsets.US_ASCII));
  }
}
