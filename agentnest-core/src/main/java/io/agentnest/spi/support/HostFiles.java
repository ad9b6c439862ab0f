package io.agentnest.spi.support;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.stream.Stream;

/** Small host-side file helpers shared by artifact transfer, snapshots and the benchmarks. */
public final class HostFiles {
  private HostFiles() {}

  /** A fresh SHA-256 digest (every JDK has it). */
  public static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Deletes {@code dir} and everything below it, without following symlinks; no-op if absent. */
  public static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  /**
   * Copies at most {@code max} bytes of regular file {@code src} into new file {@code dst} (never
   * following a link at either end), leaving holes where the source reads as zeros: a sparse disk
   * image stays sparse. Returns the bytes copied (the copy's length).
   */
  public static long copySparse(Path src, Path dst, long max) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(BLOCK);
    long pos = 0;
    try (FileChannel in =
            FileChannel.open(src, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
        FileChannel out =
            FileChannel.open(
                dst,
                StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
      while (pos < max) {
        buf.clear().limit((int) Math.min(BLOCK, max - pos));
        int n = in.read(buf);
        if (n < 0) {
          break;
        }
        buf.flip();
        if (!allZero(buf)) {
          while (buf.hasRemaining()) {
            out.write(buf, pos + buf.position());
          }
        }
        pos += n;
      }
      if (out.size() < pos) {
        // A trailing hole: one zero byte at the end gives the copy its length.
        out.write(ByteBuffer.allocate(1), pos - 1);
      }
    }
    return pos;
  }

  private static final int BLOCK = 1 << 16;

  private static boolean allZero(ByteBuffer b) {
    for (int i = b.position(); i < b.limit(); i++) {
      if (b.get(i) != 0) {
        return false;
      }
    }
    return true;
  }
}
