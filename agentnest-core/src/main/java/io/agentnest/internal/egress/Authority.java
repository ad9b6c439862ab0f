package io.agentnest.internal.egress;

import io.agentnest.IpAddresses;
import java.net.InetAddress;
import java.util.Locale;
import java.util.Optional;

/** host[:port] of a request target; host is a name or a (bracketed) IPv6 literal. */
final class Authority {
  final String host; // as written; IPv6 literals keep their brackets
  final int port;

  private Authority(String host, int port) {
    this.host = host;
    this.port = port;
  }

  /** defaultPort -1: the port is required. */
  static Authority parse(String s, int defaultPort) throws BadMessage {
    String host;
    String portText = null;
    if (s.startsWith("[")) {
      int close = s.indexOf(']');
      if (close < 0) {
        throw new BadMessage("unterminated IPv6 literal");
      }
      host = s.substring(0, close + 1);
      String rest = s.substring(close + 1);
      if (!rest.isEmpty()) {
        if (!rest.startsWith(":")) {
          throw new BadMessage("unexpected text after the IPv6 literal");
        }
        portText = rest.substring(1);
      }
    } else {
      int colon = s.indexOf(':');
      if (colon >= 0 && s.indexOf(':', colon + 1) >= 0) {
        throw new BadMessage("IPv6 literals must be in brackets, e.g. [2001:db8::1]:443");
      }
      host = colon < 0 ? s : s.substring(0, colon);
      portText = colon < 0 ? null : s.substring(colon + 1);
    }
    if (host.isEmpty() || host.equals("[]")) {
      throw new BadMessage("the host is empty");
    }
    for (int i = 0; i < host.length(); i++) {
      char c = host.charAt(i);
      if (!(Character.isLetterOrDigit(c) && c < 0x80) && ".-_[]:".indexOf(c) < 0) {
        throw new BadMessage("the host contains invalid characters");
      }
    }
    int port;
    if (portText == null) {
      if (defaultPort < 0) {
        throw new BadMessage("the port is missing");
      }
      port = defaultPort;
    } else {
      if (!portText.matches("[0-9]{1,5}")
          || Integer.parseInt(portText) < 1
          || Integer.parseInt(portText) > 65535) {
        throw new BadMessage("the port must be a number from 1 to 65535");
      }
      port = Integer.parseInt(portText);
    }
    return new Authority(host, port);
  }

  /** For events: a literal's canonical form without brackets, or the name as written. */
  String displayHost() {
    Optional<InetAddress> literal = IpAddresses.parseLiteral(host);
    return literal.map(IpAddresses::format).orElse(host.toLowerCase(Locale.ROOT));
  }

  String displayTarget() {
    String h = displayHost();
    return (h.indexOf(':') >= 0 ? "[" + h + "]" : h) + ":" + port;
  }

  String hostHeader(String canonicalHost) {
    String h = canonicalHost.indexOf(':') >= 0 ? "[" + canonicalHost + "]" : canonicalHost;
    return port == 80 ? h : h + ":" + port;
  }
}
