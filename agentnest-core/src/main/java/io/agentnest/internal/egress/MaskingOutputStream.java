package io.agentnest.internal.egress;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.List;

/**
 * Replaces every occurrence of the given secrets in what passes through with as many {@code *} (the
 * same length, so Content-Length and chunk sizes stay right), also when a secret is split across
 * writes: a tail that could begin a secret is held back until the next write or {@link #finish()}.
 * Compressed or otherwise encoded bodies are not decoded.
 */
final class MaskingOutputStream extends FilterOutputStream {
  private final byte[][] secrets;
  private final int[][] shifts;
  private final int longest;

  /** The held-back tail, then each write appended after it: reused, grown only when needed. */
  private byte[] buf = new byte[0];

  private int held;

  MaskingOutputStream(OutputStream out, List<byte[]> secrets) {
    super(out);
    this.secrets = secrets.stream().filter(s -> s.length > 0).toArray(byte[][]::new);
    this.shifts =
        Arrays.stream(this.secrets).map(MaskingOutputStream::shifts).toArray(int[][]::new);
    this.longest = Arrays.stream(this.secrets).mapToInt(s -> s.length).max().orElse(0);
  }

  /** {@code text} with every secret masked (for header values, whole at once). */
  static byte[] mask(byte[] text, List<byte[]> secrets) {
    byte[] copy = text.clone();
    for (byte[] s : secrets) {
      if (s.length > 0) {
        maskAll(copy, copy.length, s, shifts(s));
      }
    }
    return copy;
  }

  @Override
  public void write(int b) throws IOException {
    write(new byte[] {(byte) b}, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (secrets.length == 0) {
      out.write(b, off, len);
      return;
    }
    int total = held + len;
    if (buf.length < total) {
      buf = Arrays.copyOf(buf, Math.max(total, 2 * buf.length));
    }
    System.arraycopy(b, off, buf, held, len);
    for (int k = 0; k < secrets.length; k++) {
      maskAll(buf, total, secrets[k], shifts[k]);
    }
    int keep = heldTail(buf, total);
    out.write(buf, 0, total - keep);
    System.arraycopy(buf, total - keep, buf, 0, keep);
    held = keep;
  }

  /** Writes what is held back (the body is over: it cannot continue into a secret). */
  void finish() throws IOException {
    if (held > 0) {
      out.write(buf, 0, held);
      held = 0;
    }
    out.flush();
  }

  @Override
  public void close() throws IOException {
    finish();
    super.close();
  }

  /** How many trailing bytes could be the start of a secret (at most longest - 1). */
  private int heldTail(byte[] buf, int len) {
    int max = Math.min(longest - 1, len);
    for (int k = max; k > 0; k--) {
      int start = len - k;
      for (byte[] s : secrets) {
        if (s.length > k && regionEquals(buf, start, s, k)) {
          return k;
        }
      }
    }
    return 0;
  }

  /**
   * Horspool's skip table: how far the window may move when its last byte is {@code b} (the body is
   * scanned about {@code s.length} bytes at a time rather than byte by byte).
   */
  private static int[] shifts(byte[] s) {
    int[] shift = new int[256];
    Arrays.fill(shift, s.length);
    for (int i = 0; i < s.length - 1; i++) {
      shift[s[i] & 0xff] = s.length - 1 - i;
    }
    return shift;
  }

  /** Masks every non-overlapping occurrence of {@code s}, left to right. */
  private static void maskAll(byte[] buf, int len, byte[] s, int[] shift) {
    int m = s.length;
    int i = 0;
    while (i + m <= len) {
      byte last = buf[i + m - 1];
      if (last == s[m - 1] && regionEquals(buf, i, s, m - 1)) {
        Arrays.fill(buf, i, i + m, (byte) '*');
        i += m;
      } else {
        i += shift[last & 0xff];
      }
    }
  }

  private static boolean regionEquals(byte[] buf, int start, byte[] s, int n) {
    for (int j = 0; j < n; j++) {
      if (buf[start + j] != s[j]) {
        return false;
      }
    }
    return true;
  }
}
