package io.agentnest;

import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A request header that the egress proxy adds to every HTTPS request to one host, with a secret in
 * its value: the sandbox never holds the secret (see {@link NetworkPolicy.Builder#inject(String,
 * Header)}). The value sent is {@code prefix + secret + suffix}.
 *
 * <pre>{@code
 * Header.bearer(Secret.fromEnv("GITHUB_TOKEN"))            // Authorization: Bearer <token>
 * Header.of("X-Api-Key", "", Secret.fromEnv("API_KEY"), "") // X-Api-Key: <key>
 * }</pre>
 *
 * @param name the header name, an HTTP token ({@code Authorization})
 * @param prefix text before the secret ({@code "Bearer "})
 * @param secret the secret; audit records name it by {@link Secret#name()}, never by value
 * @param suffix text after the secret
 */
public record Header(String name, String prefix, Secret secret, String suffix) {
  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}");
  private static final Pattern REFERENCE =
      Pattern.compile("\\$\\{secret:([A-Za-z_][A-Za-z0-9_]*)}");

  public Header {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(secret, "secret");
    Objects.requireNonNull(suffix, "suffix");
    if (!TOKEN.matcher(name).matches()) {
      throw new ConfigException(
          "header name '" + name + "' is invalid: use an HTTP token such as Authorization");
    }
    if (isHopByHop(name)) {
      throw new ConfigException(
          "header '" + name + "' is about the connection, not the request: it cannot be injected");
    }
    for (String part : new String[] {prefix, suffix}) {
      for (int i = 0; i < part.length(); i++) {
        char c = part.charAt(i);
        if (c < 0x20 || c == 0x7f || c > 0xff) {
          throw new ConfigException(
              "the value of header '" + name + "' contains a control or non-Latin-1 character");
        }
      }
    }
    String value = secret.reveal();
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c == 0x7f || c > 0xff) {
        throw new ConfigException(
            "the secret for header '"
                + name
                + "' contains a control or non-Latin-1 character, which a header cannot carry");
      }
    }
  }

  /** {@code Authorization: Bearer <secret>}. */
  public static Header bearer(Secret secret) {
    return new Header("Authorization", "Bearer ", secret, "");
  }

  /** {@code name: prefix<secret>suffix}. */
  public static Header of(String name, String prefix, Secret secret, String suffix) {
    return new Header(name, prefix, secret, suffix);
  }

  /**
   * Parses {@code "Authorization: Bearer ${secret:GITHUB_TOKEN}"}: a header line whose value holds
   * exactly one {@code ${secret:NAME}}, resolved by {@code secrets} (e.g. {@link Secret#fromEnv}).
   *
   * @throws ConfigException naming what is wrong and the expected form
   */
  public static Header parse(String line, Function<String, Secret> secrets) {
    Objects.requireNonNull(line, "line");
    int colon = line.indexOf(':');
    if (colon <= 0) {
      throw new ConfigException(
          "header '"
              + line
              + "' has no name: write it as \"Authorization: Bearer ${secret:GITHUB_TOKEN}\"");
    }
    String name = line.substring(0, colon).trim();
    String value = line.substring(colon + 1).strip();
    Matcher m = REFERENCE.matcher(value);
    if (!m.find()) {
      throw new ConfigException(
          "header '"
              + name
              + "' names no secret: put ${secret:NAME} where the secret goes, as in"
              + " \"Authorization: Bearer ${secret:GITHUB_TOKEN}\"");
    }
    int start = m.start();
    int end = m.end();
    String secretName = m.group(1);
    if (m.find()) {
      throw new ConfigException("header '" + name + "' names more than one secret: use one");
    }
    if (value.substring(0, start).contains("${") || value.substring(end).contains("${")) {
      throw new ConfigException(
          "header '" + name + "' has a '${' that is not ${secret:NAME}: remove it");
    }
    return new Header(
        name, value.substring(0, start), secrets.apply(secretName), value.substring(end));
  }

  /** The value sent upstream; never logged. */
  public String value() {
    return prefix + secret.reveal() + suffix;
  }

  /** The name audit records use for the secret: its own name, else the header's. */
  public String secretName() {
    return secret.name().orElse(name);
  }

  @Override
  public String toString() {
    return "Header[" + name + ": " + prefix + secret + suffix + "]";
  }

  static boolean isHopByHop(String name) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "connection",
          "keep-alive",
          "proxy-connection",
          "proxy-authorization",
          "te",
          "trailer",
          "upgrade",
          "host",
          "content-length",
          "transfer-encoding" ->
          true;
      default -> false;
    };
  }
}
