package io.agentnest;

import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * An {@code agentnest serve} server that sandboxes are made on instead of the local engine, and the
 * tenant's API key for it (see docs/server.md).
 *
 * <pre>{@code
 * Sandbox sb = Sandbox.create(SandboxConfig.builder()
 *     .remote(URI.create("https://sandbox.internal:8787"), System.getenv("AGENTNEST_API_KEY"))
 *     .build());
 * }</pre>
 *
 * @param url the server's base URL: {@code https://...}, or {@code http://} on loopback only
 * @param apiKey the tenant's key, sent as {@code Authorization: Bearer}
 */
public record RemoteServer(URI url, Secret apiKey) {
  /** The environment variable with the server's URL ({@code agentnest run} reads it). */
  public static final String ENV_URL = "AGENTNEST_URL";

  /** The environment variable with the API key. */
  public static final String ENV_API_KEY = "AGENTNEST_API_KEY";

  public RemoteServer {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(apiKey, "apiKey");
    String scheme = url.getScheme();
    String host = url.getHost();
    if (scheme == null || host == null || !(scheme.equals("https") || scheme.equals("http"))) {
      throw new ConfigException(
          "remote url '" + url + "' is not an http(s) URL: use e.g. https://sandbox.internal:8787");
    }
    if (scheme.equals("http") && !isLoopbackName(host)) {
      throw new ConfigException(
          "remote url '"
              + url
              + "' is plain http to another host: the API key would cross the network in clear;"
              + " use https (the server's tls: setting), or http only to 127.0.0.1");
    }
    if (apiKey.reveal().isBlank()) {
      throw new ConfigException(
          "the remote API key is empty: set AGENTNEST_API_KEY (`agentnest tenant add` prints one)");
    }
  }

  /** The server named by AGENTNEST_URL and AGENTNEST_API_KEY in {@code env}, if the URL is set. */
  public static Optional<RemoteServer> fromEnvironment(Map<String, String> env) {
    String url = env.get(ENV_URL);
    if (url == null || url.isBlank()) {
      return Optional.empty();
    }
    String key = env.get(ENV_API_KEY);
    if (key == null || key.isBlank()) {
      throw new ConfigException(
          ENV_URL + " is set but " + ENV_API_KEY + " is not: export the tenant's API key too");
    }
    try {
      return Optional.of(new RemoteServer(URI.create(url.strip()), Secret.of(key.strip())));
    } catch (IllegalArgumentException e) {
      throw new ConfigException(ENV_URL + " '" + url + "' is not a URL: " + e.getMessage());
    }
  }

  /**
   * Only a literal loopback address, or {@code localhost}, counts: a name such as {@code
   * 127.attacker.example} resolves wherever its owner likes, so a prefix test would send the key in
   * clear across the network. IPv6 literals are parsed as literals (no name lookup happens).
   */
  static boolean isLoopbackName(String host) {
    if (host.equalsIgnoreCase("localhost")) {
      return true;
    }
    if (IPV4_LOOPBACK.matcher(host).matches()) {
      for (String octet : host.split("\\.", -1)) {
        if (Integer.parseInt(octet) > 255) {
          return false;
        }
      }
      return true;
    }
    String v6 =
        host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    if (!v6.contains(":") || !IPV6_LITERAL.matcher(v6).matches()) {
      return false;
    }
    try {
      // A literal with ':' is parsed, never looked up.
      return InetAddress.getByName(v6).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private static final Pattern IPV4_LOOPBACK =
      Pattern.compile("127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}");
  private static final Pattern IPV6_LITERAL = Pattern.compile("[0-9A-Fa-f:.]{2,45}");
}
