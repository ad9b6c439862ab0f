package io.agentnest.internal.redact;

import io.agentnest.internal.redact.RedactingStream.Piece;
import java.io.ByteArrayOutputStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Redacts a program's stdout and stderr together, so that a secret printed partly to each is masked
 * wherever a reader sees the two streams joined.
 *
 * <p>A reader sees three texts: each stream alone ({@code ExecResult.stdout()}, {@code stderr()}),
 * and both merged in the order their chunks are delivered (a terminal, {@code 2>&1}, the event
 * stream). Each stream is redacted on its own first; then one more scan runs over the merged
 * sequence in exactly the order this class releases it, which is the order every reader of the
 * merged text sees. Scanning the arrival order instead would not be sound: a stream holds back a
 * secret's first bytes while they could still grow into a match, so the other stream's bytes
 * overtake them, and the merged text a reader sees is not the one that arrived. The merged scan
 * only holds back the tail of that sequence, which any new byte of either stream decides, so
 * neither stream waits on the other.
 *
 * <p>A match of the merged scan is masked in every stream it touches: each maximal run of one
 * stream's bytes inside it becomes one mask in that stream. So removing bytes never joins what was
 * around them, in the merged text or in either stream alone.
 *
 * <p>{@link #joined} covers the third way to join them, reading one stream's collected text right
 * after the other's.
 *
 * <p>Not thread-safe: one per execution.
 */
public final class TwoStreamRedactor {
  /** Released bytes of one stream, in delivery order. */
  public record Chunk(boolean stderr, byte[] data) {}

  /** The collected texts of both streams, with what straddles their junction masked. */
  public record Joined(byte[] stdout, byte[] stderr, Map<String, Integer> counts) {}

  private final Redactor redactor;
  private final RedactingStream out;
  private final RedactingStream err;
  private final RedactingStream merged;

  /** Stream of each byte fed to the merged scan and not yet released: runs of {stderr?1:0, n}. */
  private final ArrayDeque<long[]> runs = new ArrayDeque<>();

  public TwoStreamRedactor(Redactor redactor) {
    this.redactor = redactor;
    this.out = redactor.stream();
    this.err = redactor.stream();
    this.merged = redactor.stream();
  }

  /** Feeds one stream's chunk; returns what may be delivered now, in order (possibly nothing). */
  public List<Chunk> feed(boolean stderr, byte[] data, int off, int n) {
    List<Chunk> released = new ArrayList<>();
    mergedFeed(stderr, (stderr ? err : out).feedPieces(data, off, n), released);
    return released;
  }

  /** End of both streams: everything still held back, in order. */
  public List<Chunk> finish() {
    List<Chunk> released = new ArrayList<>();
    mergedFeed(false, out.finishPieces(), released);
    mergedFeed(true, err.finishPieces(), released);
    split(merged.finishPieces(), released);
    return released;
  }

  /** Redactions so far, by rule or secret name. */
  public Map<String, Integer> counts() {
    Map<String, Integer> all = new LinkedHashMap<>(out.counts());
    err.counts().forEach((k, v) -> all.merge(k, v, Integer::sum));
    merged.counts().forEach((k, v) -> all.merge(k, v, Integer::sum));
    return all;
  }

  private void mergedFeed(boolean stderr, List<Piece> pieces, List<Chunk> released) {
    byte[] bytes = RedactingStream.render(pieces);
    if (bytes.length == 0) {
      return;
    }
    long[] last = runs.peekLast();
    long tag = stderr ? 1 : 0;
    if (last != null && last[0] == tag) {
      last[1] += bytes.length;
    } else {
      runs.addLast(new long[] {tag, bytes.length});
    }
    split(merged.feedPieces(bytes, 0, bytes.length), released);
  }

  /** Maps the merged scan's pieces back to their streams. */
  private void split(List<Piece> pieces, List<Chunk> released) {
    for (Piece p : pieces) {
      long remaining = p.end() - p.start();
      int offset = 0;
      while (remaining > 0) {
        long[] run = runs.peekFirst();
        if (run == null) {
          throw new IllegalStateException("merged redaction released bytes it was never given");
        }
        int take = (int) Math.min(remaining, run[1]);
        boolean stderr = run[0] == 1;
        if (p.label() == null) {
          add(released, stderr, Arrays.copyOfRange(p.bytes(), offset, offset + take));
        } else {
          add(released, stderr, p.bytes());
        }
        offset += take;
        remaining -= take;
        run[1] -= take;
        if (run[1] == 0) {
          runs.removeFirst();
        }
      }
    }
  }

  private static void add(List<Chunk> released, boolean stderr, byte[] data) {
    if (data.length == 0) {
      return;
    }
    Chunk last = released.isEmpty() ? null : released.get(released.size() - 1);
    if (last != null && last.stderr() == stderr) {
      byte[] both = Arrays.copyOf(last.data(), last.data().length + data.length);
      System.arraycopy(data, 0, both, last.data().length, data.length);
      released.set(released.size() - 1, new Chunk(stderr, both));
    } else {
      released.add(new Chunk(stderr, data));
    }
  }

  /**
   * The two streams' collected texts (already redacted each), with anything that straddles the end
   * of one and the start of the other masked on both sides: a reader that reads stdout and then
   * stderr (or the reverse) as one text would see it.
   */
  public Joined joined(byte[] stdout, byte[] stderr) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    byte[][] a = straddle(stdout, stderr, counts);
    byte[][] b = straddle(a[1], a[0], counts);
    return new Joined(b[1], b[0], counts);
  }

  /** {@code first} and {@code second}, with a match across the point where they meet masked. */
  private byte[][] straddle(byte[] first, byte[] second, Map<String, Integer> counts) {
    int reach = Math.max(3 * redactor.maxLiteral, redactor.maxToken) + 1;
    int tail = Math.min(first.length, reach);
    int head = Math.min(second.length, reach);
    if (tail == 0 || head == 0) {
      return new byte[][] {first, second};
    }
    byte[] window = new byte[tail + head];
    System.arraycopy(first, first.length - tail, window, 0, tail);
    System.arraycopy(second, 0, window, tail, head);
    RedactingStream s = redactor.stream();
    List<Piece> pieces = new ArrayList<>(s.feedPieces(window, 0, window.length));
    pieces.addAll(s.finishPieces());
    for (Piece p : pieces) {
      if (p.label() != null && p.start() < tail && p.end() > tail) {
        counts.merge(p.label(), 1, Integer::sum);
        ByteArrayOutputStream a = new ByteArrayOutputStream();
        a.write(first, 0, first.length - tail + (int) p.start());
        a.writeBytes(p.bytes());
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(p.bytes());
        int from = (int) p.end() - tail;
        b.write(second, from, second.length - from);
        return new byte[][] {a.toByteArray(), b.toByteArray()};
      }
    }
    return new byte[][] {first, second};
  }
}
