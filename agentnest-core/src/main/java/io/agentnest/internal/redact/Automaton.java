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

  Automaton(List<byte[]> patterns) {
    patternLength = new int[patterns.size()];
    List<int[]> gotoRows = new ArrayList<>();
    List<Integer> depths = new ArrayList<>();
    List<List<Integer>> outs = new ArrayList<>();
    gotoRows.add(newRow());
    depths.add(0);
    outs.add(new ArrayList<>());
    for (int p = 0; p < patterns.size(); p++) {
      byte[] pat = patterns.get(p);
      patternLength[p] = pat.length;
      int s = 0;
      for (byte b : pat) {
        int[] row = gotoRows.get(s);
        int c = b & 0xff;
        if (row[c] < 0) {
          row[c] = gotoRows.size();
          gotoRows.add(newRow());
          depths.add(depths.get(s) + 1);
          outs.add(new ArrayList<>());
        }
        s = row[c];
      }
      outs.get(s).add(p);
    }
    int n = gotoRows.size();
    childBytes = new byte[n][];
    childStates = new int[n][];
    for (int i = 0; i < n; i++) {
      int[] row = gotoRows.get(i);
      int count = 0;
      for (int c = 0; c < 256; c++) {
        count += row[c] >= 0 ? 1 : 0;
      }
      byte[] cb = new byte[count];
      int[] cs = new int[count];
      int k = 0;
      for (int c = 0; c < 256; c++) {
        if (row[c] >= 0) {
          cb[k] = (byte) c;
          cs[k++] = row[c];
        }
      }
      childBytes[i] = cb;
      childStates[i] = cs;
      gotoRows.set(i, null); // free the build-time rows as we go
    }
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
      for (int k = 0; k < cb.length; k++) {
        int t = cs[k];
        fail[t] = st == 0 ? 0 : step(fail[st], cb[k] & 0xff);
        outs.get(t).addAll(outs.get(fail[t]));
        queue.add(t);
      }
      if (denseIndex[st] >= 0) {
        int base = denseIndex[st] * 256;
        for (int c = 0; c < 256; c++) {
          int child = child(st, c);
          dense[base + c] = child >= 0 ? child : (st == 0 ? 0 : step(fail[st], c));
        }
      }
    }
    outputs = new int[n][];
    for (int i = 0; i < n; i++) {
      List<Integer> o = outs.get(i);
      if (!o.isEmpty()) {
        outputs[i] = o.stream().distinct().mapToInt(Integer::intValue).toArray();
      }
    }
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

  private static int[] newRow() {
    int[] r = new int[256];
    Arrays.fill(r, -1);
    return r;
  }
}
