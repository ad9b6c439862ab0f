package io.agentnest.internal.redact;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;

/**
 * Redacts one output stream chunk by chunk. A secret split across chunks is still masked: the
 * stream holds back exactly the trailing bytes that could still become part of a match (the
 * automaton's current depth, or an open credential token) and releases everything else at once, so
 * streaming stays live. Memory is bounded by the longest secret or token rule.
 *
 * <p>Not thread-safe: one per stream.
 */
public final class RedactingStream {
  private static final int MAX_CANDIDATES = 32;

  private final Redactor r;
  private byte[] buf = new byte[8192];

  /** Absolute offset of buf[0]. */
  private long base;

  private int len;
  private int state;
  private final List<long[]> intervals = new ArrayList<>(); // {start, end} absolute
  private final List<String> intervalLabels = new ArrayList<>();
  private final List<Candidate> candidates = new ArrayList<>();
  private final Map<String, Integer> counts = new LinkedHashMap<>();

  private record Candidate(long start, Redactor.TokenRule rule) {}

  RedactingStream(Redactor r) {
    this.r = r;
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
    ensure(len + n);
    System.arraycopy(data, off, buf, len, n);
    int from = len;
    len += n;
    int s = state;
    for (int i = from; i < len; i++) {
      int b = buf[i] & 0xff;
      if (!candidates.isEmpty()) {
        advanceCandidates(i, b);
      }
      s = r.step(s, b);
      int[] out = r.outputs[s];
      if (out != null) {
        found(out, i);
      }
    }
    state = s;
    return release(false);
  }

  /** End of stream: decides every open token and releases the rest. */
  public byte[] finish() {
    for (Candidate c : new ArrayList<>(candidates)) {
      evaluate(c, base + len);
    }
    candidates.clear();
    state = 0;
    return release(true);
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
      long start = end - r.patternLength[p];
      String label = r.secretLabel[p];
      if (label != null) {
        addInterval(start, end, label);
      } else if (candidates.size() < MAX_CANDIDATES) {
        Redactor.TokenRule rule = r.tokenRuleOf[p];
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
    intervals.add(new long[] {start, end});
    intervalLabels.add(label);
    counts.merge(label, 1, Integer::sum);
  }

  private byte[] release(boolean all) {
    long end = base + len;
    long safe = all ? end : end - r.depth[state];
    for (Candidate c : candidates) {
      safe = Math.min(safe, c.start);
    }
    // Sort and merge intervals; an interval crossing the boundary holds the boundary back.
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < intervals.size(); i++) {
      order.add(i);
    }
    order.sort(Comparator.comparingLong(i -> intervals.get(i)[0]));
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
      return new byte[0];
    }
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream((int) (safe - base) + 64);
    long pos = base;
    List<long[]> keep = new ArrayList<>();
    List<String> keepLabels = new ArrayList<>();
    long maskedUntil = base;
    for (int i : order) {
      long[] iv = intervals.get(i);
      if (iv[0] >= safe) {
        keep.add(iv);
        keepLabels.add(intervalLabels.get(i));
        continue;
      }
      long s = Math.max(iv[0], maskedUntil);
      if (s > pos) {
        out.write(buf, (int) (pos - base), (int) (s - pos));
        pos = s;
      }
      if (iv[1] > maskedUntil) {
        if (iv[0] >= maskedUntil) {
          out.writeBytes(Redactor.mask(intervalLabels.get(i)).getBytes(StandardCharsets.US_ASCII));
        }
        maskedUntil = iv[1];
        pos = Math.max(pos, iv[1]);
      }
    }
    if (safe > pos) {
      out.write(buf, (int) (pos - base), (int) (safe - pos));
    }
    int drop = (int) (safe - base);
    System.arraycopy(buf, drop, buf, 0, len - drop);
    len -= drop;
    base = safe;
    intervals.clear();
    intervalLabels.clear();
    intervals.addAll(keep);
    intervalLabels.addAll(keepLabels);
    return out.toByteArray();
  }

  private void ensure(int cap) {
    if (cap > buf.length) {
      byte[] nb = new byte[Math.max(cap, buf.length * 2)];
      System.arraycopy(buf, 0, nb, 0, len);
      buf = nb;
    }
  }
}
