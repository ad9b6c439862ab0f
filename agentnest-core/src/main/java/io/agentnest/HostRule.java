package io.agentnest;

import java.net.IDN;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * One host rule of a {@link NetworkPolicy} ({@code pypi.org}, {@code *.pythonhosted.org}, {@code
 * example.com:8443}), parsed and checked once, and how it decides a host and port: the name must be
 * equal, or for a wildcard at most {@value NetworkPolicy#WILDCARD_DEPTH} labels below its domain,
 * never a public DNS-over-HTTPS resolver's name and never port 853.
 */
final class HostRule {
  private static final Pattern LABEL = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

  /** DNS over TLS: never through a wildcard. */
  static final int DOT_PORT = 853;

  /**
   * DNS-over-HTTPS names of public resolvers (and the domains below which each serves it): a
   * wildcard covering one of them would hand sandbox code a resolver that answers any name, outside
   * the proxy's view.
   */
  private static final Set<String> DOH_DOMAINS =
      Set.of(
          "dns.google",
          "dns.google.com",
          "cloudflare-dns.com",
          "one.one.one.one",
          "dns.quad9.net",
          "doh.opendns.com",
          "dns.adguard.com",
          "dns.adguard-dns.com",
          "dns.nextdns.io",
          "doh.cleanbrowsing.org",
          "doh.mullvad.net",
          "dns.controld.com",
          "doh.dns.sb",
          "dns.alidns.com",
          "doh.pub");

  final String text;
  final String name; // without "*."
  final boolean wildcard;
  final int port; // 0 = default ports

  HostRule(String text, String name, boolean wildcard, int port) {
    this.text = text;
    this.name = name;
    this.wildcard = wildcard;
    this.port = port;
  }

  boolean matches(String host, int p) {
    boolean portOk = port == 0 ? NetworkPolicy.DEFAULT_PORTS.contains(p) : port == p;
    if (!portOk) {
      return false;
    }
    if (wildcard) {
      return p != DOT_PORT
          && host.length() > name.length() + 1
          && host.endsWith(name)
          && host.charAt(host.length() - name.length() - 1) == '.'
          && extraLabels(host, name) <= NetworkPolicy.WILDCARD_DEPTH
          && !isResolverName(host);
    }
    return host.equals(name);
  }

  /** Why this wildcard, which covers {@code host}'s domain, still does not allow it; or null. */
  @Nullable String wildcardRefusal(String host, int p) {
    if (!wildcard
        || !(host.length() > name.length() + 1
            && host.endsWith(name)
            && host.charAt(host.length() - name.length() - 1) == '.')) {
      return null;
    }
    if (p == DOT_PORT) {
      return "a wildcard never allows port 853 (DNS over TLS): name the host exactly";
    }
    if (isResolverName(host)) {
      return host
          + " serves DNS over HTTPS: a wildcard never allows it (the sandbox would get a resolver"
          + " of its own); name it exactly to allow it";
    }
    if (extraLabels(host, name) > NetworkPolicy.WILDCARD_DEPTH) {
      return host
          + " is more than "
          + NetworkPolicy.WILDCARD_DEPTH
          + " labels below "
          + text
          + " (deep names can carry data out through lookups): name it, or add a wildcard"
          + " closer to it";
    }
    return null;
  }

  private static int extraLabels(String host, String domain) {
    String prefix = host.substring(0, host.length() - domain.length() - 1);
    return (int) prefix.chars().filter(c -> c == '.').count() + 1;
  }

  private static boolean isResolverName(String host) {
    for (String d : DOH_DOMAINS) {
      if (host.equals(d) || host.endsWith("." + d)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Lowercase punycode name without trailing dot; throws IllegalArgumentException with the reason.
   */
  static String canonicalName(String host, boolean forRule) {
    if (host.isEmpty()) {
      throw new IllegalArgumentException("the name is empty");
    }
    for (int i = 0; i < host.length(); i++) {
      char c = host.charAt(i);
      if (Character.isWhitespace(c) || Character.isISOControl(c) || Character.isSpaceChar(c)) {
        throw new IllegalArgumentException("it contains whitespace or control characters");
      }
    }
    String s = host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
    String ascii;
    if (s.chars().allMatch(c -> c < 0x80)) {
      ascii = s.toLowerCase(Locale.ROOT);
    } else {
      try {
        ascii = IDN.toASCII(s, 0).toLowerCase(Locale.ROOT);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "it is not a valid internationalised name (" + e.getMessage() + ")", e);
      }
    }
    if (ascii.isEmpty() || ascii.startsWith(".") || ascii.endsWith(".") || ascii.contains("..")) {
      throw new IllegalArgumentException("it has an empty label");
    }
    if (ascii.length() > 253) {
      throw new IllegalArgumentException("it is longer than 253 characters");
    }
    if (IpAddresses.looksLikeIpLiteral(ascii)) {
      throw new IllegalArgumentException(
          forRule
              ? "it is an IP address, not a name: use allowAddress(\"" + host + "\") for addresses"
              : "it looks like an IP address");
    }
    for (String label : ascii.split("\\.", -1)) {
      if (!LABEL.matcher(label).matches()) {
        throw new IllegalArgumentException(
            "label '"
                + label
                + "' is invalid: use letters, digits and '-' (not at either end), at most 63"
                + " characters");
      }
    }
    return ascii;
  }

  static HostRule parse(String raw) {
    String s = raw;
    int port = 0;
    int colon = s.lastIndexOf(':');
    if (colon >= 0) {
      String p = s.substring(colon + 1);
      if (!p.matches("[0-9]{1,5}") || Integer.parseInt(p) < 1 || Integer.parseInt(p) > 65535) {
        throw invalidRule(raw, "port '" + p + "' is not a number from 1 to 65535");
      }
      port = Integer.parseInt(p);
      s = s.substring(0, colon);
      if (s.indexOf(':') >= 0 || s.startsWith("[")) {
        throw invalidRule(raw, "it is an IP address, not a name: use allowAddress(...) instead");
      }
    }
    boolean wildcard = s.startsWith("*.");
    String name = wildcard ? s.substring(2) : s;
    if (name.contains("*")) {
      throw invalidRule(raw, "'*' is only allowed as the whole first label, as in *.example.com");
    }
    String canonical;
    try {
      canonical = canonicalName(name, true);
    } catch (IllegalArgumentException e) {
      throw invalidRule(raw, e.getMessage());
    }
    if (wildcard && canonical.indexOf('.') < 0) {
      throw invalidRule(
          raw,
          "a wildcard must name at least a second-level domain ('*."
              + canonical
              + "' would allow a whole top-level domain)");
    }
    String text = (wildcard ? "*." : "") + canonical + (port == 0 ? "" : ":" + port);
    return new HostRule(text, canonical, wildcard, port);
  }

  private static ConfigException invalidRule(String raw, @Nullable String why) {
    return new ConfigException(
        "network.allow rule '"
            + raw
            + "' is invalid: "
            + why
            + "; use a name such as pypi.org, a wildcard such as *.pythonhosted.org, optionally"
            + " with a port (example.com:8443)");
  }

  /** The canonical name of a credential rule's host, which a rule must allow on port 443. */
  static String credentialHost(String raw, List<HostRule> rules, String kind) {
    String host;
    try {
      host = canonicalName(raw, true);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(
          "network.credentials "
              + kind
              + " host '"
              + raw
              + "' is invalid: "
              + e.getMessage()
              + "; name one host exactly, such as api.github.com (no wildcard, no port)");
    }
    boolean allowed = false;
    for (HostRule r : rules) {
      allowed |= r.matches(host, r.port == 0 ? 443 : r.port);
    }
    if (!allowed) {
      throw new ConfigException(
          "network.credentials "
              + kind
              + " host '"
              + host
              + "' is not allowed by any network.allow rule: add allow(\""
              + host
              + "\") too");
    }
    return host;
  }
}
