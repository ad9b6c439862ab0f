package io.agentnest;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Which requests the egress proxy forwards, with their credential, to a host with credential rules
 * (see {@link NetworkPolicy.Builder#restrict(String, RequestRule...)}): a request whose method and
 * path match no rule of its host gets {@code 403} from the proxy and never reaches the host.
 *
 * <pre>{@code
 * RequestRule.of("/repos/acme/", "GET", "HEAD")   // read anything under /repos/acme/
 * RequestRule.of("/graphql", "POST")              // exactly /graphql (and below it), by POST
 * RequestRule.of("/user")                          // any method
 * }</pre>
 *
 * <p>A prefix matches at a segment boundary: {@code /repos/acme} matches {@code /repos/acme} and
 * {@code /repos/acme/x}, not {@code /repos/acme-evil}. The query string is not compared. Paths are
 * compared as sent, after refusing every ambiguous one (see {@link #ambiguity(String)}): a server
 * must not be able to read a path differently from the proxy.
 *
 * @param methods the allowed methods, upper-case ({@code GET}); empty allows every method
 * @param pathPrefix where allowed paths start, e.g. {@code /repos/acme/}
 */
public record RequestRule(Set<String> methods, String pathPrefix) {
  /** Longest path prefix a rule may have. */
  public static final int MAX_PREFIX = 1024;

  private static final Pattern METHOD = Pattern.compile("[A-Z][A-Z0-9_-]{0,31}");

  public RequestRule {
    Objects.requireNonNull(methods, "methods");
    Objects.requireNonNull(pathPrefix, "pathPrefix");
    Set<String> m = new LinkedHashSet<>();
    for (String method : methods) {
      String up = Objects.requireNonNull(method, "method").strip().toUpperCase(Locale.ROOT);
      if (!METHOD.matcher(up).matches()) {
        throw new ConfigException(
            "request rule method '"
                + method
                + "' is not an HTTP method: use names such as GET, HEAD, POST");
      }
      m.add(up);
    }
    methods = Set.copyOf(m);
    if (pathPrefix.isEmpty() || pathPrefix.charAt(0) != '/' || pathPrefix.length() > MAX_PREFIX) {
      throw new ConfigException(
          "request rule path '"
              + pathPrefix
              + "' must start with '/' and have at most "
              + MAX_PREFIX
              + " characters, e.g. /repos/acme/");
    }
    Optional<String> why = ambiguity(pathPrefix);
    if (why.isPresent() || pathPrefix.indexOf('?') >= 0) {
      throw new ConfigException(
          "request rule path '"
              + pathPrefix
              + "' is not a plain path ("
              + why.orElse("it has a query")
              + "): write it as the server's canonical path, e.g. /repos/acme/");
    }
  }

  /** A rule for paths under {@code pathPrefix}, by {@code methods} (none given: any method). */
  public static RequestRule of(String pathPrefix, String... methods) {
    return new RequestRule(new LinkedHashSet<>(List.of(methods)), pathPrefix);
  }

  /**
   * Whether a request with this method and path (origin form, query allowed) is allowed; the path
   * must already have passed {@link #ambiguity(String)}.
   */
  public boolean allows(String method, String path) {
    if (!methods.isEmpty() && !methods.contains(method)) {
      return false;
    }
    int q = path.indexOf('?');
    String p = q < 0 ? path : path.substring(0, q);
    if (!p.startsWith(pathPrefix)) {
      return false;
    }
    return p.length() == pathPrefix.length()
        || pathPrefix.endsWith("/")
        || p.charAt(pathPrefix.length()) == '/';
  }

  /**
   * Why the path part of {@code target} (before any {@code ?}) could be read differently by a
   * server than by a plain prefix comparison; empty when it is unambiguous. Refused: dot segments
   * ({@code .}, {@code ..}), empty segments ({@code //}), a backslash, {@code ;} (path parameters,
   * as in {@code /..;/}), a fragment, percent-encoded dots, slashes, backslashes, percent signs,
   * semicolons or control characters, malformed percent-encoding, and encoded bytes that are not
   * valid UTF-8 (overlong forms of {@code .} or {@code /}).
   */
  public static Optional<String> ambiguity(String target) {
    int q = target.indexOf('?');
    String path = q < 0 ? target : target.substring(0, q);
    if (path.isEmpty() || path.charAt(0) != '/') {
      return Optional.of("it does not start with '/'");
    }
    List<Integer> bytes = new ArrayList<>();
    for (int i = 0; i < path.length(); i++) {
      char c = path.charAt(i);
      if (c <= 0x20 || c >= 0x7f) {
        return Optional.of("it has a space, control or non-ASCII character");
      }
      if (c == '\\') {
        return Optional.of("it has a backslash");
      }
      if (c == ';') {
        return Optional.of("it has ';' (path parameters)");
      }
      if (c == '#') {
        return Optional.of("it has a fragment");
      }
      if (c == '%') {
        if (i + 2 >= path.length() || hex(path.charAt(i + 1)) < 0 || hex(path.charAt(i + 2)) < 0) {
          return Optional.of("it has a malformed percent-encoding");
        }
        int b = hex(path.charAt(i + 1)) * 16 + hex(path.charAt(i + 2));
        if (b == '.' || b == '/' || b == '\\' || b == '%' || b == ';' || b < 0x20 || b == 0x7f) {
          return Optional.of("it encodes '.', '/', '\\', '%', ';' or a control character");
        }
        bytes.add(b);
        i += 2;
      } else {
        bytes.add((int) c);
      }
    }
    if (!validUtf8(bytes)) {
      return Optional.of("its percent-encoded bytes are not valid UTF-8");
    }
    String[] segments = path.substring(1).split("/", -1);
    for (int i = 0; i < segments.length; i++) {
      String s = segments[i];
      if (s.equals(".") || s.equals("..")) {
        return Optional.of("it has a '" + s + "' segment");
      }
      if (s.isEmpty() && i < segments.length - 1) {
        return Optional.of("it has an empty segment ('//')");
      }
    }
    return Optional.empty();
  }

  /** {@code GET,HEAD /repos/acme/}, or {@code * /user}: the rule's name in audit records. */
  public String describe() {
    return (methods.isEmpty() ? "*" : String.join(",", methods.stream().sorted().toList()))
        + " "
        + pathPrefix;
  }

  private static int hex(char c) {
    return Character.digit(c, 16);
  }

  /** Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
  private static boolean validUtf8(List<Integer> bytes) {
    int i = 0;
    while (i < bytes.size()) {
      int b = bytes.get(i);
      int n;
      int min;
      if (b < 0x80) {
        i++;
        continue;
      } else if (b >= 0xc2 && b <= 0xdf) {
        n = 1;
        min = 0x80;
      } else if (b >= 0xe0 && b <= 0xef) {
        n = 2;
        min = 0x800;
      } else if (b >= 0xf0 && b <= 0xf4) {
        n = 3;
        min = 0x10000;
      } else {
        return false;
      }
      if (i + n >= bytes.size()) {
        return false;
      }
      int cp = b & (0x3f >> n);
      for (int k = 1; k <= n; k++) {
        int c = bytes.get(i + k);
        if ((c & 0xc0) != 0x80) {
          return false;
        }
        cp = (cp << 6) | (c & 0x3f);
      }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return false;
      }
      i += n + 1;
    }
    return true;
  }
}
