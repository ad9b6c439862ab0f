package io.agentnest.kubernetes.internal;

/**
 * Text from the cluster or the sandbox (pod status messages, a container's termination message,
 * stderr) on its way into an error message a person reads: bounded, control characters shown as
 * escapes, so it cannot repaint a terminal.
 */
public final class Text {
  private Text() {}

  public static String bounded(String s, int max) {
    StringBuilder b = new StringBuilder(Math.min(s.length(), max) + 16);
    for (int i = 0; i < s.length() && b.length() < max; i++) {
      char c = s.charAt(i);
      if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f) || (c > 0x9f && !isFormat(c))) {
        b.append(c);
      } else {
        b.append(String.format("\\u%04x", (int) c));
      }
    }
    if (b.length() >= max && s.length() > max) {
      b.append("...");
    }
    return b.toString();
  }

  private static boolean isFormat(char c) {
    // Bidirectional overrides and other invisible formatting characters can disguise text.
    return Character.getType(c) == Character.FORMAT;
  }
}
