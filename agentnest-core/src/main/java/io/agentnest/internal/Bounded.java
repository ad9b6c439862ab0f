package io.agentnest.internal;

/** Bounds strings that came out of a sandbox. */
public final class Bounded {
  private Bounded() {}

  public static String text(String s, int max) {
    if (s.length() <= max) {
      return s;
    }
    return s.substring(0, max) + "... [truncated " + (s.length() - max) + " chars]";
  }

  /** A name from the sandbox, safe to show a person: control characters written as escapes. */
  static String escaped(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length() && b.length() < 200; i++) {
      char c = s.charAt(i);
      switch (c) {
        case '\0' -> b.append("\\0");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        case '\\' -> b.append("\\\\");
        default -> {
          if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
            b.append(String.format("\\x%02x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.length() >= 200 ? b + "..." : b.toString();
  }
}
