package io.agentnest.internal.redact;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * An Aho-Corasick automaton over bytes: {@link #step} advances by one byte, {@link #outputs} names
 * the patterns that end in a state, {@link #depth} is how many trailing bytes a state still depends
 * on (what a stream must hold back). Immutable and thread-safe.
 */
final class Automaton {
  /** States shallower than this have a full row of 256 transitions; the rest are sparse. */
  private static final int DENSE_DEPTH = 3;

  private final int[] dense;
  private final int[] denseIndex;
  private final byte[][] childBytes;
  private final int[][] childStates;
  private final int[] fail;
  private final int[] depth;
  private final int[] @Nullable [] outputs;
  private final int[] patternLength;

  /**
   * Builds the trie with child lists (a 256-entry row per state made every sandbox's redactor cost
   * a millisecond before the JIT had compiled this), then the failure links and the dense rows
   * breadth first: a dense row starts as a copy of its failure state's, which is shallower and so
   * already complete, and then takes its own children.
   */
  Automaton(List<byte[]> patterns) {
    patternLength = new int[patterns.size()];
    List<byte[]> kids = new ArrayList<>();
    List<int[]> kidStates = new ArrayList<>();
    List<Integer> depths = new ArrayList<>();
    List<List<Integer>> outs = new ArrayList<>();
    kids.add(new byte[0]);
    kidStates.add(new int[0]);
    depths.add(0);
    outs.add(new ArrayList<>());
    for (int p = 0; p < patterns.size(); p++) {
      byte[] pat = patterns.get(p);
      patternLength[p] = pat.length;
      int s = 0;
      for (byte b : pat) {
        int t = childIn(kids.get(s), kidStates.get(s), b);
        if (t < 0) {
          t = kids.size();
          kids.add(new byte[0]);
          kidStates.add(new int[0]);
          depths.add(depths.get(s) + 1);
          outs.add(new ArrayList<>());
          byte[] cb = Arrays.copyOf(kids.get(s), kids.get(s).length + 1);
          int[] cs = Arrays.copyOf(kidStates.get(s), cb.length);
          cb[cb.length - 1] = b;
          cs[cs.length - 1] = t;
          kids.set(s, cb);
          kidStates.set(s, cs);
        }
        s = t;
      }
      outs.get(s).add(p);
    }
    int n = kids.size();
    childBytes = kids.toArray(new byte[0][]);
    childStates = kidStates.toArray(new int[0][]);
    fail = new int[n];
    depth = new int[n];
    for (int i = 0; i < n; i++) {
      depth[i] = depths.get(i);
    }
    denseIndex = new int[n];
    Arrays.fill(denseIndex, -1);
    int denseCount = 0;
    for (int i = 0; i < n; i++) {
      if (depth[i] < DENSE_DEPTH) {
        denseIndex[i] = denseCount++;
      }
    }
    dense = new int[denseCount * 256];
    ArrayDeque<Integer> queue = new ArrayDeque<>();
    queue.add(0);
    while (!queue.isEmpty()) {
      int st = queue.poll();
      byte[] cb = childBytes[st];
      int[] cs = childStates[st];
      if (denseIndex[st] >= 0) {
        int base = denseIndex[st] * 256;
        if (st != 0) {
          System.arraycopy(dense, denseIndex[fail[st]] * 256, dense, base, 256);
        }
        for (int k = 0; k < cb.length; k++) {
          dense[base + (cb[k] & 0xff)] = cs[k];
        }
      }
      for (int k = 0; k < cb.length; k++) {
        int t = cs[k];
        fail[t] = st == 0 ? 0 : step(fail[st], cb[k] & 0xff);
        outs.get(t).addAll(outs.get(fail[t]));
        queue.add(t);
      }
    }
    outputs = new int[n][];
    for (int i = 0; i < n; i++) {
      List<Integer> o = outs.get(i);
      if (!o.isEmpty()) {
        outputs[i] = distinct(o);
      }
    }
  }

  /** The list's values once each, in order (a stream here cost more than the rest, cold). */
  private static int[] distinct(List<Integer> values) {
    int[] out = new int[values.size()];
    int n = 0;
    for (int v : values) {
      boolean seen = false;
      for (int k = 0; k < n && !seen; k++) {
        seen = out[k] == v;
      }
      if (!seen) {
        out[n++] = v;
      }
    }
    return n == out.length ? out : Arrays.copyOf(out, n);
  }

  private static int childIn(byte[] cb, int[] cs, byte b) {
    for (int k = 0; k < cb.length; k++) {
      if (cb[k] == b) {
        return cs[k];
      }
    }
    return -1;
  }

  private int child(int st, int c) {
    byte[] cb = childBytes[st];
    for (int k = 0; k < cb.length; k++) {
      if ((cb[k] & 0xff) == c) {
        return childStates[st][k];
      }
    }
    return -1;
  }

  /** The transition: dense rows near the root, child lists and failure links deeper. */
  int step(int st, int c) {
    while (true) {
      int d = denseIndex[st];
      if (d >= 0) {
        return dense[d * 256 + c];
      }
      int t = child(st, c);
      if (t >= 0) {
        return t;
      }
      st = fail[st];
    }
  }

  /** How many trailing bytes state {@code st} has matched of some pattern. */
  int depth(int st) {
    return depth[st];
  }

  /** Pattern ids ending in state {@code st} (through failure links too), or null. */
  int @Nullable [] outputs(int st) {
    return outputs[st];
  }

  int patternLength(int p) {
    return patternLength[p];
  }
}
