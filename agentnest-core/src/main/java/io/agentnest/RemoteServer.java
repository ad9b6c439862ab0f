package io.agentnest;

import java.net.URI;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

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

  private static boolean isLoopbackName(String host) {
    return host.equals("localhost")
        || host.equals("[::1]")
        || host.equals("::1")
        || host.startsWith("127.");
  }
}
