package io.agentnest.internal;

/** Bounds strings that came out of a sandbox. */
final class Bounded {
  private Bounded() {}

  static String text(String s, int max) {
    if (s.length() <= max) {
      return s;
    }
    return s.substring(0, max) + "... [truncated " + (s.length() - max) + " chars]";
  }
}
