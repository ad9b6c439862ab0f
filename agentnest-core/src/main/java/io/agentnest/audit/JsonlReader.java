package io.agentnest.audit;

import java.io.Closeable;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Reads {@code events.jsonl} line by line from a byte offset, knowing each line's offset and
 * whether it ended with a newline. Uses {@link RandomAccessFile} (not an interruptible channel).
 */
final class JsonlReader implements Closeable {
  private final RandomAccessFile file;
  private byte[] buf = new byte[1 << 20];
  private int start;
  private int end;
  private long bufOffset;
  private long lineStart;
  private boolean terminated;

  JsonlReader(Path path, long offset) throws IOException {
    this.file = new RandomAccessFile(path.toFile(), "r");
    seek(offset);
  }

  void seek(long offset) throws IOException {
    file.seek(offset);
    bufOffset = offset;
    start = 0;
    end = 0;
  }

  /** The next line (without its newline), or null at the end of the file. */
  @Nullable String next() throws IOException {
    while (true) {
      for (int i = start; i < end; i++) {
        if (buf[i] == '\n') {
          String s = new String(buf, start, i - start, StandardCharsets.UTF_8);
          lineStart = bufOffset + start;
          terminated = true;
          start = i + 1;
          return s;
        }
      }
      if (!fill()) {
        if (start == end) {
          return null;
        }
        String s = new String(buf, start, end - start, StandardCharsets.UTF_8);
        lineStart = bufOffset + start;
        terminated = false;
        start = end;
        return s;
      }
    }
  }

  /** Offset of the line last returned. */
  long lineStart() {
    return lineStart;
  }

  /** Offset just after what has been returned. */
  long position() {
    return bufOffset + start;
  }

  /** The length of the open file now (it may have been renamed since it was opened). */
  long length() throws IOException {
    return file.length();
  }

  /** Whether the line last returned ended with a newline. */
  boolean terminated() {
    return terminated;
  }

  private boolean fill() throws IOException {
    if (start > 0) {
      System.arraycopy(buf, start, buf, 0, end - start);
      bufOffset += start;
      end -= start;
      start = 0;
    }
    if (end == buf.length) {
      buf = Arrays.copyOf(buf, buf.length * 2);
    }
    int n = file.read(buf, end, buf.length - end);
    if (n <= 0) {
      return false;
    }
    end += n;
    return true;
  }

  /** Cheap seq of a line written by AuditLog (its seq field comes first), or -1. */
  static long quickSeq(String line) {
    if (!line.startsWith("{\"seq\":")) {
      return -1;
    }
    long v = 0;
    int i = 7;
    int digits = 0;
    while (i < line.length() && Character.isDigit(line.charAt(i)) && digits < 18) {
      v = v * 10 + (line.charAt(i) - '0');
      i++;
      digits++;
    }
    return digits == 0 || i >= line.length() || line.charAt(i) != ',' ? -1 : v;
  }

  @Override
  public void close() throws IOException {
    file.close();
  }
}
