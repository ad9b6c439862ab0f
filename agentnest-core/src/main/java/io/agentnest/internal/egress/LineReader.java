package io.agentnest.internal.egress;

import java.io.IOException;
import java.io.InputStream;
import org.jspecify.annotations.Nullable;

/** Reads bounded CRLF (or LF) terminated lines as ISO-8859-1, counting the bytes. */
final class LineReader {
  final InputStream in;
  long bytes;

  LineReader(InputStream in) {
    this.in = in;
  }

  /** A line without its terminator; null on end of stream before any byte of it. */
  @Nullable String read(int max, String what) throws IOException, BadMessage {
    StringBuilder sb = new StringBuilder(Math.min(max, 256));
    boolean cr = false;
    while (true) {
      int b = in.read();
      if (b < 0) {
        if (sb.length() == 0 && !cr) {
          return null;
        }
        throw new BadMessage("the " + what + " ends without a line break");
      }
      bytes++;
      if (b == '\n') {
        return sb.toString();
      }
      if (cr) {
        throw new BadMessage("stray CR in the " + what);
      }
      if (b == '\r') {
        cr = true;
        continue;
      }
      if ((b < 0x20 && b != '\t') || b == 0x7f) {
        throw new BadMessage("control character in the " + what);
      }
      if (sb.length() >= max) {
        throw new BadMessage("the " + what + " is longer than " + max + " bytes");
      }
      sb.append((char) b);
    }
  }
}
