package io.agentnest.internal.redact;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import org.jspecify.annotations.Nullable;

/**
 * Redacts one output stream chunk by chunk. A secret split across chunks is still masked: the
 * stream holds back exactly the trailing bytes that could still become part of a match (the
 * automata's current depth, or an open credential token) and releases everything else at once, so
 * streaming stays live. Memory is bounded by the longest secret or token rule.
 *
 * <p>Base64 forms are matched by a second automaton that looks through a line break (one LF or
 * CRLF) that follows at least {@link #MIN_WRAPPED_LINE} base64 characters, so base64 wrapped into
 * lines (MIME and {@code base64} at 76 columns, PEM at 64) is masked when a break falls inside the
 * secret's encoding. Any other line break ends such a match: a short line of text ending in a
 * letter is not held back waiting for a next line.
 *
 * <p>Not thread-safe: one per stream.
 */
public final class RedactingStream {
  private static final int MAX_CANDIDATES = 32;

  /** Shortest line after which a line break may be a wrap inside base64. */
  static final int MIN_WRAPPED_LINE = 16;

  private static final boolean[] BASE64 = new boolean[256];

  /** Bytes a hex dump puts between digits; skipped by the separated-hex automaton. */
  private static final boolean[] SEPARATOR = new boolean[256];

  /** More separators in a row than this end a separated-hex match (no dump uses as many). */
  static final int MAX_SEPARATORS = 4;

  static {
    for (char c : " \t:-\r\n".toCharArray()) {
      SEPARATOR[c] = true;
    }
    for (char c :
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=".toCharArray()) {
      BASE64[c] = true;
    }
  }

  /** A run of released input: its own bytes, or the mask ({@code label} set) standing for them. */
  record Piece(long start, long end, byte[] bytes, @Nullable String label) {}

  private final Redactor r;
  private final boolean keep;
  private byte[] buf = new byte[8192];

  /** Absolute offset of buf[0]. */
  private long base;

  private int len;
  private int state;
  private int wrappedState;
  private int hexState;
  private int separatorRun;
  private int lineBreaks;
  private int base64Run;
  private boolean wrapping;
  private final List<long[]> intervals = new ArrayList<>(); // {start, end} absolute
  private final List<String> intervalLabels = new ArrayList<>();
  private final List<Candidate> candidates = new ArrayList<>();
  private final Map<String, Integer> counts = new LinkedHashMap<>();

  private record Candidate(long start, Redactor.TokenRule rule) {}

  /**
   * @param keep false for a scan that only counts matches (nothing is released, nothing copied)
   */
  RedactingStream(Redactor r, boolean keep) {
    this.r = r;
    this.keep = keep;
  }

  /** Redactions so far, by rule or secret name. */
  public Map<String, Integer> counts() {
    return counts;
  }

  /** Bytes currently held back (for tests of the look-behind bound). */
  public int held() {
    return len;
  }

  /** Feeds a chunk; returns the bytes that are now safe to release (possibly none). */
  public byte[] feed(byte[] data, int off, int n) {
    return render(feedPieces(data, off, n));
  }

  /** End of stream: decides every open token and releases the rest. */
  public byte[] finish() {
    return render(finishPieces());
  }

  List<Piece> feedPieces(byte[] data, int off, int n) {
    ensure(len + n);
    System.arraycopy(data, off, buf, len, n);
    int from = len;
    len += n;
    Automaton plain = r.plain;
    Automaton wrapped = r.wrapped;
    Automaton hex = r.separatedHex;
    int s = state;
    int w = wrappedState;
    int h = hexState;
    for (int i = from; i < len; i++) {
      int b = buf[i] & 0xff;
      if (!candidates.isEmpty()) {
        advanceCandidates(i, b);
      }
      if (SEPARATOR[b]) {
        if (++separatorRun > MAX_SEPARATORS) {
          h = 0;
        }
      } else {
        separatorRun = 0;
        h = hex.step(h, b >= 'A' && b <= 'F' ? b + ('a' - 'A') : b);
        int[] hout = hex.outputs(h);
        if (hout != null) {
          for (int p : hout) {
            int first = startOf(i, hex.patternLength(p), SEPARATOR);
            addInterval(base + first, base + i + 1, r.separatedHexLabel[p]);
          }
        }
      }
      s = plain.step(s, b);
      int[] out = plain.outputs(s);
      if (out != null) {
        found(out, i);
      }
      if (b == '\r' || b == '\n') {
        if (lineBreaks++ == 0) {
          wrapping = base64Run >= MIN_WRAPPED_LINE;
        }
        if (!wrapping || lineBreaks > 2) {
          w = 0;
        }
        base64Run = 0;
      } else {
        lineBreaks = 0;
        base64Run = BASE64[b] ? base64Run + 1 : 0;
        w = wrapped.step(w, b);
        int[] wout = wrapped.outputs(w);
        if (wout != null) {
          foundWrapped(wout, i);
        }
      }
    }
    state = s;
    wrappedState = w;
    hexState = h;
    return release(false);
  }

  List<Piece> finishPieces() {
    for (Candidate c : new ArrayList<>(candidates)) {
      evaluate(c, base + len);
    }
    candidates.clear();
    state = 0;
    wrappedState = 0;
    hexState = 0;
    separatorRun = 0;
    lineBreaks = 0;
    base64Run = 0;
    return release(true);
  }

  static byte[] render(List<Piece> pieces) {
    if (pieces.isEmpty()) {
      return new byte[0];
    }
    if (pieces.size() == 1) {
      return pieces.get(0).bytes();
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Piece p : pieces) {
      out.writeBytes(p.bytes());
    }
    return out.toByteArray();
  }

  private void advanceCandidates(int i, int b) {
    for (int k = candidates.size() - 1; k >= 0; k--) {
      Candidate c = candidates.get(k);
      int start = (int) (c.start - base);
      if (c.rule.extendsWith(buf, start, i, b)) {
        if (c.rule.complete(buf, start, i + 1)) {
          candidates.remove(k);
          evaluate(c, base + i + 1);
        }
      } else {
        candidates.remove(k);
        evaluate(c, base + i + 1); // the terminating byte is part of the evidence
      }
    }
  }

  private void found(int[] patterns, int i) {
    long end = base + i + 1;
    for (int p : patterns) {
      long start = end - r.plain.patternLength(p);
      String label = r.plainLabel[p];
      Redactor.TokenRule rule = r.plainRule[p];
      if (label != null) {
        addInterval(start, end, label);
      } else if (rule != null && candidates.size() < MAX_CANDIDATES) {
        boolean dup = false;
        for (Candidate c : candidates) {
          if (c.rule == rule && c.start == start) {
            dup = true;
            break;
          }
        }
        if (!dup) {
          candidates.add(new Candidate(start, rule));
        }
      }
    }
  }

  /** A base64 form ending at buf[i]: it starts where its first byte is, line breaks skipped. */
  private void foundWrapped(int[] patterns, int i) {
    for (int p : patterns) {
      addInterval(base + startOf(i, r.wrapped.patternLength(p)), base + i + 1, r.wrappedLabel[p]);
    }
  }

  private static final boolean[] LINE_BREAK = new boolean[256];

  static {
    LINE_BREAK['\r'] = true;
    LINE_BREAK['\n'] = true;
  }

  /** Index in buf of the {@code count}-th byte other than CR/LF counted back from {@code last}. */
  private int startOf(int last, int count) {
    return startOf(last, count, LINE_BREAK);
  }

  /**
   * Index in buf of the {@code count}-th byte not {@code skipped} counted back from {@code last}.
   */
  private int startOf(int last, int count, boolean[] skipped) {
    int j = last;
    int seen = 0;
    while (j >= 0) {
      int b = buf[j] & 0xff;
      if (!skipped[b] && ++seen == count) {
        return j;
      }
      j--;
    }
    return 0; // cannot happen while the hold-back is right; never unmask anything
  }

  private void evaluate(Candidate c, long regionEnd) {
    int start = (int) (c.start - base);
    int end = (int) (regionEnd - base);
    if (start < 0 || end > len || end <= start) {
      return;
    }
    String region = new String(buf, start, end - start, StandardCharsets.ISO_8859_1);
    Matcher m = c.rule.pattern.matcher(region);
    if (m.lookingAt()) {
      int g = m.groupCount() >= 1 ? 1 : 0;
      addInterval(c.start + m.start(g), c.start + m.end(g), c.rule.label);
    }
  }

  private void addInterval(long start, long end, String label) {
    if (start < base) {
      start = base; // cannot happen while the hold-back is right; never unmask anything
    }
    for (long[] iv : intervals) {
      if (iv[0] == start && iv[1] == end) {
        return; // one form found by both automata (a secret that is itself base64 text)
      }
    }
    intervals.add(new long[] {start, end});
    intervalLabels.add(label);
    counts.merge(label, 1, Integer::sum);
  }

  private List<Piece> release(boolean all) {
    long end = base + len;
    long safe = all ? end : end - r.plain.depth(state);
    int wd = all ? 0 : r.wrapped.depth(wrappedState);
    if (wd > 0) {
      safe = Math.min(safe, base + startOf(len - 1, wd));
    }
    int hd = all ? 0 : r.separatedHex.depth(hexState);
    if (hd > 0) {
      safe = Math.min(safe, base + startOf(len - 1, hd, SEPARATOR));
    }
    for (Candidate c : candidates) {
      safe = Math.min(safe, c.start);
    }
    // Sort and merge intervals; an interval crossing the boundary holds the boundary back.
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < intervals.size(); i++) {
      order.add(i);
    }
    // By start; at the same start the longest first, so that it names the mask.
    order.sort(
        Comparator.<Integer>comparingLong(i -> intervals.get(i)[0])
            .thenComparingLong(i -> -intervals.get(i)[1]));
    boolean moved = true;
    while (moved) {
      moved = false;
      for (int i : order) {
        long[] iv = intervals.get(i);
        if (iv[1] > safe && iv[0] < safe) {
          safe = iv[0];
          moved = true;
        }
      }
    }
    if (safe <= base) {
      return List.of();
    }
    List<Piece> out = new ArrayList<>();
    long pos = base;
    List<long[]> keepIntervals = new ArrayList<>();
    List<String> keepLabels = new ArrayList<>();
    long maskStart = -1;
    long maskedUntil = base;
    String maskLabel = "";
    for (int i : order) {
      long[] iv = intervals.get(i);
      if (iv[0] >= safe) {
        keepIntervals.add(iv);
        keepLabels.add(intervalLabels.get(i));
        continue;
      }
      if (iv[0] >= maskedUntil) {
        // A new mask: close the previous one, release the text before this one.
        if (maskStart >= 0) {
          out.add(mask(maskStart, maskedUntil, maskLabel));
        }
        if (iv[0] > pos) {
          out.add(text(pos, iv[0]));
        }
        maskStart = iv[0];
        maskLabel = intervalLabels.get(i);
      }
      if (iv[1] > maskedUntil) {
        maskedUntil = iv[1];
        pos = Math.max(pos, iv[1]);
      }
    }
    if (maskStart >= 0) {
      out.add(mask(maskStart, maskedUntil, maskLabel));
    }
    if (safe > pos) {
      out.add(text(pos, safe));
    }
    int drop = (int) (safe - base);
    System.arraycopy(buf, drop, buf, 0, len - drop);
    len -= drop;
    base = safe;
    intervals.clear();
    intervalLabels.clear();
    intervals.addAll(keepIntervals);
    intervalLabels.addAll(keepLabels);
    return keep ? out : List.of();
  }

  private Piece text(long from, long to) {
    byte[] b = keep ? Arrays.copyOfRange(buf, (int) (from - base), (int) (to - base)) : NONE;
    return new Piece(from, to, b, null);
  }

  private static Piece mask(long from, long to, String label) {
    return new Piece(from, to, Redactor.mask(label).getBytes(StandardCharsets.US_ASCII), label);
  }

  private static final byte[] NONE = new byte[0];

  private void ensure(int cap) {
    if (cap > buf.length) {
      byte[] nb = new byte[Math.max(cap, buf.length * 2)];
      System.arraycopy(buf, 0, nb, 0, len);
      buf = nb;
    }
  }
}
