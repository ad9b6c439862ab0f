package io.agentnest.config;

import java.util.Collection;
import java.util.Locale;
import java.util.Optional;

/** "Did you mean" suggestions by Levenshtein distance. */
final class Suggestions {
  /** Always suggest at this distance or closer. */
  static final int NEAR = 2;

  private Suggestions() {}

  /**
   * The candidate nearest to {@code input}: when it is within {@link #NEAR} edits, or when it is a
   * clear best (no other candidate as near, and fewer edits than half the longer word).
   */
  static Optional<String> nearest(String input, Collection<String> candidates) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    int secondDistance = Integer.MAX_VALUE;
    String in = normalize(input);
    for (String c : candidates) {
      int d = distance(in, normalize(c));
      if (d < bestDistance) {
        secondDistance = bestDistance;
        bestDistance = d;
        best = c;
      } else if (d < secondDistance) {
        secondDistance = d;
      }
    }
    if (best == null) {
      return Optional.empty();
    }
    if (bestDistance <= NEAR) {
      return Optional.of(best);
    }
    boolean clear =
        bestDistance < secondDistance && bestDistance * 2 < Math.max(input.length(), best.length());
    return clear ? Optional.of(best) : Optional.empty();
  }

  /** "; did you mean 'x'?" or "; valid: a, b, c". */
  static String hint(String input, Collection<String> candidates, String validLabel) {
    Optional<String> near = nearest(input, candidates);
    if (near.isPresent()) {
      return "; did you mean '" + near.get() + "'?";
    }
    return candidates.isEmpty() ? "" : "; " + validLabel + ": " + String.join(", ", candidates);
  }

  private static String normalize(String s) {
    return s.toLowerCase(Locale.ROOT).replace('-', '_');
  }

  /** Levenshtein distance (insertions, deletions, substitutions). */
  static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }
}
