package io.agentnest.internal.egress;

import io.agentnest.internal.support.Bounded;
import java.io.EOFException;

/** Character-level rules of HTTP/1.1 messages, and text made safe to show. */
final class HttpSyntax {
  private static final int MAX_REASON_CHARS = 300;

  private HttpSyntax() {}

  static boolean isToken(String s) {
    if (s.isEmpty()) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean ok =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  static boolean isVisibleAscii(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c <= 0x20 || c >= 0x7f) {
        return false;
      }
    }
    return true;
  }

  /** Printable ASCII only, bounded: safe in a header value and in a log line. */
  static String printable(String s) {
    String bounded = Bounded.text(s, MAX_REASON_CHARS);
    StringBuilder sb = new StringBuilder(bounded.length());
    for (int i = 0; i < bounded.length(); i++) {
      char c = bounded.charAt(i);
      sb.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return sb.toString();
  }

  static String describe(Throwable e) {
    String m = e.getMessage();
    if (e instanceof EOFException || m == null || m.isBlank()) {
      return e.getClass().getSimpleName();
    }
    return m;
  }
}
