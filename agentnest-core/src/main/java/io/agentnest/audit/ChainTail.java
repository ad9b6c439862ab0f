package io.agentnest.audit;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Where the chain of one file ends: the seq and hash of its last well-formed record, and whether an
 * interrupted write left a torn last line. Read backwards from the end, so that opening a large
 * trail costs a few kilobytes, not the whole file.
 */
record ChainTail(long seq, String hash, boolean torn) {
  /** The last well-formed record of the file (seq 0 and genesis for none). */
  static ChainTail read(Path file, long size) throws IOException {
    if (size == 0) {
      return new ChainTail(0, AuditEvent.GENESIS, false);
    }
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
      f.seek(size - 1);
      boolean torn = f.read() != '\n';
      int window = 1 << 16;
      while (true) {
        long from = Math.max(0, size - window);
        byte[] b = new byte[(int) (size - from)];
        f.seek(from);
        f.readFully(b);
        int end = b.length;
        if (torn) {
          int nl = lastIndexOf(b, end - 1);
          end = nl < 0 ? 0 : nl + 1;
        }
        // walk complete lines backwards
        int lineEnd = end - 1;
        while (lineEnd > 0) {
          int nl = lastIndexOf(b, lineEnd - 1);
          if (nl < 0 && from > 0) {
            break; // the line starts before the window
          }
          String line = new String(b, nl + 1, lineEnd - nl - 1, StandardCharsets.UTF_8);
          try {
            AuditEvent e = AuditJson.parse(line);
            return new ChainTail(e.seq(), e.hash(), torn);
          } catch (IllegalArgumentException ex) {
            lineEnd = nl;
          }
        }
        if (from == 0) {
          return new ChainTail(0, AuditEvent.GENESIS, torn);
        }
        if (window >= (1 << 26)) {
          throw new IOException("no well-formed record in the last 64 MiB of " + file);
        }
        window *= 4;
      }
    }
  }

  private static int lastIndexOf(byte[] b, int from) {
    for (int i = from; i >= 0; i--) {
      if (b[i] == '\n') {
        return i;
      }
    }
    return -1;
  }
}
