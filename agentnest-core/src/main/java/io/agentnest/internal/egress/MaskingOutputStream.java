package io.agentnest.internal.egress;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.List;

/**
 * Replaces every occurrence of the given secrets in what passes through with as many {@code *} (the
 * same length, so a Content-Length stays right), also when a secret is split across writes: a tail
 * that could begin a secret is held back until the next write or {@link #finish()}.
 *
 * <p>Pieces count too: any run of {@link #PIECE} or more bytes that appears inside a secret is
 * masked wherever it stands (an echo cut short, or cut in the middle by a server's own length
 * limit, hands out no long piece), and a message that ends in the first {@link #MIN_TAIL} or more
 * bytes of a secret has that tail masked at {@link #finish()} (an echo cut one byte short). The
 * stream sees decoded bytes: the caller removes transfer framing and content codings first.
 */
final class MaskingOutputStream extends FilterOutputStream {
  /**
   * A run this long from inside a secret is masked anywhere. Eight bytes: a chance match in ten
   * megabytes of random binary is about one in ten thousand per secret, and what leaks in shorter
   * pieces is a few characters of a token.
   */
  static final int PIECE = 8;

  /** A message ending in at least this many leading bytes of a secret has them masked. */
  static final int MIN_TAIL = 4;

  private final byte[][] secrets;
  private final int[][] shifts;
  private final int longest;
  private final PieceSet pieces;

  /**
   * The held-back tail, then each write appended after it, as received: matching always runs on the
   * real bytes (a piece masked in one write still completes a match in the next).
   */
  private byte[] buf = new byte[0];

  /** Which bytes of {@link #buf} are to be masked. */
  private boolean[] marks = new boolean[0];

  private byte[] outBuf = new byte[0];
  private int held;

  MaskingOutputStream(OutputStream out, List<byte[]> secrets) {
    super(out);
    this.secrets = secrets.stream().filter(s -> s.length > 0).toArray(byte[][]::new);
    this.shifts =
        Arrays.stream(this.secrets).map(MaskingOutputStream::shifts).toArray(int[][]::new);
    this.longest = Arrays.stream(this.secrets).mapToInt(s -> s.length).max().orElse(0);
    this.pieces = new PieceSet(this.secrets);
  }

  /** {@code text} with every secret and every piece of one masked (for heads, whole at once). */
  static byte[] mask(byte[] text, List<byte[]> secrets) {
    byte[][] nonEmpty = secrets.stream().filter(s -> s.length > 0).toArray(byte[][]::new);
    boolean[] m = new boolean[text.length];
    for (byte[] s : nonEmpty) {
      markAll(text, m, text.length, s, shifts(s));
    }
    new PieceSet(nonEmpty).markPieces(text, m, text.length);
    byte[] copy = text.clone();
    for (int i = 0; i < copy.length; i++) {
      if (m[i]) {
        copy[i] = '*';
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
      int size = Math.max(total, 2 * buf.length);
      buf = Arrays.copyOf(buf, size);
      marks = Arrays.copyOf(marks, size);
      outBuf = new byte[size];
    }
    System.arraycopy(b, off, buf, held, len);
    Arrays.fill(marks, held, total, false);
    for (int k = 0; k < secrets.length; k++) {
      markAll(buf, marks, total, secrets[k], shifts[k]);
    }
    pieces.markPieces(buf, marks, total);
    int keep = Math.max(heldTail(buf, total), pieces.heldTail(buf, total));
    emit(total - keep);
    System.arraycopy(buf, total - keep, buf, 0, keep);
    System.arraycopy(marks, total - keep, marks, 0, keep);
    held = keep;
  }

  private void emit(int n) throws IOException {
    for (int i = 0; i < n; i++) {
      outBuf[i] = marks[i] ? (byte) '*' : buf[i];
    }
    out.write(outBuf, 0, n);
  }

  /**
   * Writes what is held back: the message is over, so a tail that begins a secret ({@link
   * #MIN_TAIL} bytes or more) is masked as if the secret had followed.
   */
  void finish() throws IOException {
    if (held > 0) {
      for (int k = Math.min(held, longest - 1); k >= MIN_TAIL; k--) {
        int start = held - k;
        boolean prefix = false;
        for (byte[] s : secrets) {
          prefix |= s.length > k && regionEquals(buf, start, s, k);
        }
        if (prefix) {
          Arrays.fill(marks, start, held, true);
          break;
        }
      }
      emit(held);
      held = 0;
    }
    out.flush();
  }

  /** Drops what is held back (the message broke off: nothing more goes to the client). */
  void abandon() {
    held = 0;
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

  /** Marks every non-overlapping occurrence of {@code s}, left to right. */
  private static void markAll(byte[] buf, boolean[] marks, int len, byte[] s, int[] shift) {
    int m = s.length;
    int i = 0;
    while (i + m <= len) {
      byte last = buf[i + m - 1];
      if (last == s[m - 1] && regionEquals(buf, i, s, m - 1)) {
        Arrays.fill(marks, i, i + m, true);
        i += m;
      } else {
        i += shift[last & 0xff];
      }
    }
  }

  private static boolean regionEquals(byte[] buf, int start, byte[] s, int n) {
    return sameBytes(buf, start, s, 0, n);
  }

  private static boolean sameBytes(byte[] a, int aOff, byte[] b, int bOff, int n) {
    for (int j = 0; j < n; j++) {
      if (a[aOff + j] != b[bOff + j]) {
        return false;
      }
    }
    return true;
  }

  /**
   * Every {@link #PIECE}-byte window of the secrets long enough to have one, packed into a long, in
   * an open-addressing table: one multiply and a probe or two per byte scanned.
   */
  static final class PieceSet {
    private final long[] table;
    private final boolean[] used;
    private final byte[][] secrets;
    private final int mask;

    PieceSet(byte[][] secrets) {
      this.secrets = Arrays.stream(secrets).filter(s -> s.length >= PIECE).toArray(byte[][]::new);
      int count = 0;
      for (byte[] s : this.secrets) {
        count += s.length - PIECE + 1;
      }
      int size = Integer.highestOneBit(Math.max(4, count * 4) - 1) << 1;
      this.table = new long[size];
      this.used = new boolean[size];
      this.mask = size - 1;
      for (byte[] s : this.secrets) {
        for (int i = 0; i + PIECE <= s.length; i++) {
          add(pack(s, i));
        }
      }
    }

    private static long pack(byte[] b, int off) {
      long w = 0;
      for (int j = 0; j < PIECE; j++) {
        w = (w << 8) | (b[off + j] & 0xff);
      }
      return w;
    }

    private int slot(long w) {
      return (int) ((w * 0x9E3779B97F4A7C15L) >>> 40) & mask;
    }

    private void add(long w) {
      int i = slot(w);
      while (used[i] && table[i] != w) {
        i = (i + 1) & mask;
      }
      used[i] = true;
      table[i] = w;
    }

    private boolean contains(long w) {
      int i = slot(w);
      while (used[i]) {
        if (table[i] == w) {
          return true;
        }
        i = (i + 1) & mask;
      }
      return false;
    }

    /** Marks every window of {@code buf[0, len)} that is a piece of a secret. */
    void markPieces(byte[] buf, boolean[] marks, int len) {
      if (secrets.length == 0 || len < PIECE) {
        return;
      }
      long w = 0;
      int markedUpTo = 0; // windows overlap: fill only what is new
      for (int i = 0; i < len; i++) {
        w = (w << 8) | (buf[i] & 0xff);
        int start = i - PIECE + 1;
        if (start >= 0 && contains(w)) {
          Arrays.fill(marks, Math.max(start, markedUpTo), i + 1, true);
          markedUpTo = i + 1;
        }
      }
    }

    /**
     * How many trailing bytes (fewer than {@link #PIECE}) appear inside a secret and so could begin
     * a piece that the next write completes.
     */
    int heldTail(byte[] buf, int len) {
      for (int k = Math.min(PIECE - 1, len); k > 0; k--) {
        for (byte[] s : secrets) {
          for (int i = 0; i + k <= s.length; i++) {
            if (sameBytes(buf, len - k, s, i, k)) {
              return k;
            }
          }
        }
      }
      return 0;
    }
  }
}
