package io.agentnest.server.http;

/** Client-supplied text quoted back in an error: bounded and printable, so it cannot forge. */
public final class Escape {
  private Escape() {}

  public static String id(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length() && i < 80; i++) {
      char c = s.charAt(i);
      b.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return s.length() > 80 ? b + "..." : b.toString();
  }
}
