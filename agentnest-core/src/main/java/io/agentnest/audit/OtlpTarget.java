package io.agentnest.audit;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * An OpenTelemetry collector for {@link AuditSinks#otlp}: OTLP/HTTP logs (protobuf). Built with
 * {@link #builder}, which checks every value. Header values (e.g. an authorization token) are never
 * shown by {@link #toString()}.
 *
 * @param endpoint the full logs URL, e.g. {@code http://collector:4318/v1/logs} ({@code /v1/logs}
 *     is added to a URL without a path)
 * @param headers sent with every export request
 * @param timeout bound on one export request
 * @param compression {@code gzip} (default) or {@code none}
 * @param queueCapacity records held while the collector is slow or down (default {@value
 *     SyslogTarget#DEFAULT_QUEUE}); more are dropped and counted
 * @param flushTimeout how long {@link ShippingSink#close} keeps sending what is queued
 */
public record OtlpTarget(
    URI endpoint,
    Map<String, String> headers,
    Duration timeout,
    String compression,
    int queueCapacity,
    Duration flushTimeout) {

  private static final Pattern HEADER_NAME = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}");

  public OtlpTarget {
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(timeout, "timeout");
    Objects.requireNonNull(compression, "compression");
    Objects.requireNonNull(flushTimeout, "flushTimeout");
    String scheme = endpoint.getScheme();
    if (scheme == null
        || !(scheme.equals("http") || scheme.equals("https"))
        || endpoint.getHost() == null) {
      throw new IllegalArgumentException(
          "OTLP endpoint '"
              + endpoint
              + "' is not an http(s) URL with a host: write e.g. http://collector:4318/v1/logs");
    }
    headers = Map.copyOf(new LinkedHashMap<>(headers));
    for (Map.Entry<String, String> h : headers.entrySet()) {
      if (!HEADER_NAME.matcher(h.getKey()).matches()) {
        throw new IllegalArgumentException(
            "OTLP header name '" + h.getKey() + "' is not a valid HTTP header name");
      }
      if (h.getValue().chars().anyMatch(c -> c < ' ' || c == 0x7f)) {
        throw new IllegalArgumentException(
            "OTLP header " + h.getKey() + " has a control character in its value: remove it");
      }
    }
    if (!compression.equals("gzip") && !compression.equals("none")) {
      throw new IllegalArgumentException(
          "OTLP compression '" + compression + "' is unknown: use gzip or none");
    }
    if (timeout.isNegative() || timeout.isZero() || flushTimeout.isNegative()) {
      throw new IllegalArgumentException("OTLP timeouts must be positive: e.g. timeout 10s");
    }
    if (queueCapacity < 1 || queueCapacity > 1_000_000) {
      throw new IllegalArgumentException(
          "OTLP queue " + queueCapacity + " is out of range: use 1-1000000");
    }
  }

  /** The endpoint without query or user info: names the collector in stats and logs. */
  public String describe() {
    return "otlp+" + endpoint.getScheme() + "://" + endpoint.getHost() + ":" + port() + path();
  }

  private int port() {
    return endpoint.getPort() > 0
        ? endpoint.getPort()
        : endpoint.getScheme().equals("https") ? 443 : 80;
  }

  private String path() {
    return endpoint.getRawPath() == null ? "" : endpoint.getRawPath();
  }

  @Override
  public String toString() {
    return "OtlpTarget["
        + describe()
        + ", headers="
        + headers.keySet()
        + ", timeout="
        + timeout
        + ", compression="
        + compression
        + ", queue="
        + queueCapacity
        + "]";
  }

  public static Builder builder(String endpoint) {
    return new Builder(endpoint);
  }

  /** Builds an {@link OtlpTarget}; {@link #build} checks the values. */
  public static final class Builder {
    private final URI endpoint;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private Duration timeout = Duration.ofSeconds(10);
    private String compression = "gzip";
    private int queueCapacity = SyslogTarget.DEFAULT_QUEUE;
    private Duration flushTimeout = Duration.ofSeconds(5);

    private Builder(String endpoint) {
      URI u;
      try {
        u = new URI(Objects.requireNonNull(endpoint, "endpoint").strip());
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException(
            "OTLP endpoint '"
                + endpoint
                + "' is not a URL ("
                + e.getReason()
                + "): write e.g. http://collector:4318/v1/logs",
            e);
      }
      if (u.getRawPath() == null || u.getRawPath().isEmpty() || u.getRawPath().equals("/")) {
        u = u.resolve("/v1/logs");
      }
      this.endpoint = u;
    }

    public Builder header(String name, String value) {
      headers.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    public Builder timeout(Duration d) {
      this.timeout = Objects.requireNonNull(d, "timeout");
      return this;
    }

    /** {@code gzip} or {@code none}. */
    public Builder compression(String c) {
      this.compression = Objects.requireNonNull(c, "compression");
      return this;
    }

    public Builder queueCapacity(int n) {
      this.queueCapacity = n;
      return this;
    }

    public Builder flushTimeout(Duration d) {
      this.flushTimeout = Objects.requireNonNull(d, "flushTimeout");
      return this;
    }

    public OtlpTarget build() {
      return new OtlpTarget(endpoint, headers, timeout, compression, queueCapacity, flushTimeout);
    }
  }
}
