package io.agentnest.mcp;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Whether a {@code Host} or {@code Origin} header names this machine's loopback interface, decided
 * by parsing, never by string prefix: a web page can point any name it owns at 127.0.0.1 (DNS
 * rebinding), so only names no one else can own pass: {@code localhost}, a dotted-decimal IPv4
 * literal in 127.0.0.0/8, and the IPv6 literal {@code [::1]}, each with an optional port.
 *
 * <p>Refused, among others: {@code 127.0.0.1.attacker.example}, {@code localhost.attacker}, a
 * trailing dot, octal, hex, short or integer IPv4 spellings ({@code 0177.0.0.1}, {@code
 * 0x7f.0.0.1}, {@code 127.1}, {@code 2130706433}), IPv6 zone ids or embedded IPv4, user info, a bad
 * port.
 */
final class LoopbackNames {
  private static final Pattern ORIGIN = Pattern.compile("(?i)(https?)://([^/?#]+)");

  private LoopbackNames() {}

  /** A {@code Host} header value: {@code host} or {@code host:port}. */
  static boolean isLoopbackHost(String value) {
    String host;
    String port = null;
    if (value.startsWith("[")) {
      int end = value.indexOf(']');
      if (end < 0) {
        return false;
      }
      host = value.substring(0, end + 1);
      String rest = value.substring(end + 1);
      if (!rest.isEmpty()) {
        if (!rest.startsWith(":")) {
          return false;
        }
        port = rest.substring(1);
      }
    } else {
      int colon = value.indexOf(':');
      if (colon >= 0 && value.indexOf(':', colon + 1) >= 0) {
        return false;
      }
      host = colon < 0 ? value : value.substring(0, colon);
      port = colon < 0 ? null : value.substring(colon + 1);
    }
    return (port == null || isPort(port)) && isLoopbackName(host);
  }

  /** An {@code Origin} header value: {@code http(s)://host[:port]}; {@code null} is not one. */
  static boolean isLoopbackOrigin(String value) {
    Matcher m = ORIGIN.matcher(value);
    return m.matches() && isLoopbackHost(m.group(2));
  }

  /** {@code localhost}, a strict IPv4 literal in 127.0.0.0/8, or a bracketed IPv6 {@code ::1}. */
  static boolean isLoopbackName(String host) {
    if (host.toLowerCase(Locale.ROOT).equals("localhost")) {
      return true;
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      return isIpv6Loopback(host.substring(1, host.length() - 1));
    }
    return isIpv4Loopback(host);
  }

  private static boolean isPort(String s) {
    if (s.isEmpty() || s.length() > 5 || !s.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return false;
    }
    int p = Integer.parseInt(s);
    return p >= 1 && p <= 65535;
  }

  /** Four decimal octets without leading zeros (which some parsers read as octal), first 127. */
  private static boolean isIpv4Loopback(String s) {
    String[] parts = s.split("\\.", -1);
    if (parts.length != 4) {
      return false;
    }
    for (String p : parts) {
      if (p.isEmpty()
          || p.length() > 3
          || !p.chars().allMatch(c -> c >= '0' && c <= '9')
          || (p.length() > 1 && p.charAt(0) == '0')
          || Integer.parseInt(p) > 255) {
        return false;
      }
    }
    return parts[0].equals("127");
  }

  /** Hex groups with at most one {@code ::}; no zone id, no embedded IPv4; equal to ::1. */
  private static boolean isIpv6Loopback(String s) {
    if (s.isEmpty() || !s.chars().allMatch(c -> c == ':' || Character.digit(c, 16) >= 0)) {
      return false;
    }
    int gap = s.indexOf("::");
    if (gap >= 0 && s.indexOf("::", gap + 1) >= 0) {
      return false;
    }
    String[] head;
    String[] tail;
    if (gap >= 0) {
      head = groups(s.substring(0, gap));
      tail = groups(s.substring(gap + 2));
      if (head == null || tail == null || head.length + tail.length > 7) {
        return false;
      }
    } else {
      head = groups(s);
      tail = new String[0];
      if (head == null || head.length != 8) {
        return false;
      }
    }
    int[] value = new int[8];
    for (int i = 0; i < head.length; i++) {
      value[i] = Integer.parseInt(head[i], 16);
    }
    for (int i = 0; i < tail.length; i++) {
      value[8 - tail.length + i] = Integer.parseInt(tail[i], 16);
    }
    for (int i = 0; i < 7; i++) {
      if (value[i] != 0) {
        return false;
      }
    }
    return value[7] == 1;
  }

  /** Colon-separated groups of 1-4 hex digits ({@code ""} is none); null when malformed. */
  private static String @Nullable [] groups(String s) {
    if (s.isEmpty()) {
      return new String[0];
    }
    String[] g = s.split(":", -1);
    for (String x : g) {
      if (x.isEmpty() || x.length() > 4) {
        return null;
      }
    }
    return g;
  }
}
