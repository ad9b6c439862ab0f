package io.agentnest.server.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.agentnest.audit.AuditSinks;
import io.agentnest.audit.OtlpTarget;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.SyslogTarget;
import io.agentnest.audit.SyslogTarget.Facility;
import io.agentnest.audit.SyslogTarget.Transport;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The {@code audit:} block of {@code server.yaml}: collectors every record of the server's audit
 * log is shipped to, besides the local hash-chained log (which stays the source of truth).
 *
 * <pre>{@code
 * audit:
 *   sinks:
 *     - {type: syslog, transport: tls, host: logs.example.org, port: 6514, facility: authpriv,
 *        trust_store: /etc/agentnest/logs-ca.p12, trust_store_password_env: LOGS_CA_PASSWORD}
 *     - {type: otlp, endpoint: "http://otel-collector:4318/v1/logs",
 *        headers_env: {Authorization: OTLP_AUTH_HEADER}}
 * }</pre>
 *
 * Secrets are never written in the file: a trust store password and header values come from the
 * environment variables named here, read when the server starts.
 *
 * @param sinks the collectors, checked when the file is read
 */
public record AuditShippingConfig(List<Sink> sinks) {
  public AuditShippingConfig {
    sinks = List.copyOf(sinks);
  }

  public static AuditShippingConfig none() {
    return new AuditShippingConfig(List.of());
  }

  /**
   * One collector; {@link #open} makes its sink.
   *
   * @param where the file and entry it came from, for errors at start
   */
  public record Sink(
      String where,
      @Nullable SyslogTarget syslog,
      @Nullable Path trustStore,
      String trustStoreType,
      @Nullable String trustStorePasswordEnv,
      @Nullable OtlpTarget otlp,
      Map<String, String> headersEnv) {
    public Sink {
      headersEnv = Map.copyOf(headersEnv);
    }

    /** The target without secrets, e.g. {@code syslog+tls://logs.example.org:6514}. */
    public String describe() {
      return syslog != null ? syslog.describe() : otlp == null ? "?" : otlp.describe();
    }

    /**
     * Reads the secrets from {@code env} and starts the sink.
     *
     * @throws IllegalArgumentException naming the variable or file to fix
     */
    public ShippingSink open(Map<String, String> env) {
      if (syslog != null) {
        if (trustStore == null) {
          return AuditSinks.syslog(syslog);
        }
        char[] password = null;
        if (trustStorePasswordEnv != null) {
          String p = env.get(trustStorePasswordEnv);
          if (p == null) {
            throw new IllegalArgumentException(
                where
                    + ": trust_store_password_env names "
                    + trustStorePasswordEnv
                    + ", which is not set: export it before `agentnest serve`");
          }
          password = p.toCharArray();
        }
        SyslogTarget.Builder b =
            SyslogTarget.builder()
                .to(syslog.transport(), syslog.host(), syslog.port())
                .facility(syslog.facility())
                .queueCapacity(syslog.queueCapacity())
                .maxMessageBytes(syslog.maxMessageBytes());
        try {
          b.trustStore(trustStore, trustStoreType, password);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
        }
        return AuditSinks.syslog(b.build());
      }
      OtlpTarget o = otlp;
      if (o == null) {
        throw new IllegalStateException(where + ": neither syslog nor otlp");
      }
      OtlpTarget.Builder b =
          OtlpTarget.builder(o.endpoint().toString())
              .timeout(o.timeout())
              .compression(o.compression())
              .queueCapacity(o.queueCapacity());
      for (Map.Entry<String, String> h : headersEnv.entrySet()) {
        String v = env.get(h.getValue());
        if (v == null) {
          throw new IllegalArgumentException(
              where
                  + ": headers_env."
                  + h.getKey()
                  + " names "
                  + h.getValue()
                  + ", which is not set: export it before `agentnest serve`");
        }
        b.header(h.getKey(), v);
      }
      return AuditSinks.otlp(b.build());
    }
  }

  // The YAML shape: every key of either type; parse() refuses keys of the other type.
  record Shape(@Nullable List<SinkShape> sinks) {}

  record SinkShape(
      @Nullable String type,
      @Nullable String transport,
      @Nullable String host,
      @Nullable Integer port,
      @Nullable String facility,
      @JsonProperty("trust_store") @Nullable String trustStore,
      @JsonProperty("trust_store_type") @Nullable String trustStoreType,
      @JsonProperty("trust_store_password_env") @Nullable String trustStorePasswordEnv,
      @JsonProperty("max_message") @Nullable Integer maxMessage,
      @Nullable Integer queue,
      @Nullable String endpoint,
      @JsonProperty("headers_env") @Nullable Map<String, String> headersEnv,
      @Nullable String timeout,
      @Nullable String compression) {}

  static AuditShippingConfig parse(@Nullable Shape shape, String source) {
    if (shape == null || shape.sinks() == null) {
      return none();
    }
    List<Sink> out = new ArrayList<>();
    for (int i = 0; i < shape.sinks().size(); i++) {
      SinkShape s = shape.sinks().get(i);
      String where = source + ": audit.sinks[" + i + "]";
      if (s == null || s.type() == null) {
        throw new IllegalArgumentException(
            where + " has no type: write type: syslog or type: otlp");
      }
      try {
        out.add(
            switch (s.type().strip().toLowerCase(Locale.ROOT)) {
              case "syslog" -> syslog(s, where);
              case "otlp" -> otlp(s, where);
              default ->
                  throw new IllegalArgumentException(
                      "type '" + s.type() + "' is unknown: use syslog or otlp");
            });
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            String.valueOf(e.getMessage()).startsWith(source)
                ? e.getMessage()
                : where + ": " + e.getMessage(),
            e);
      }
    }
    return new AuditShippingConfig(out);
  }

  private static Sink syslog(SinkShape s, String where) {
    refuse("syslog", "endpoint", s.endpoint());
    refuse("syslog", "headers_env", s.headersEnv());
    refuse("syslog", "timeout", s.timeout());
    refuse("syslog", "compression", s.compression());
    if (s.host() == null || s.port() == null) {
      throw new IllegalArgumentException(
          "a syslog sink needs host and port, e.g. {type: syslog, transport: tls, host:"
              + " logs.example.org, port: 6514}");
    }
    Transport t = s.transport() == null ? Transport.TLS : Transport.parse(s.transport());
    if (t != Transport.TLS && (s.trustStore() != null || s.trustStorePasswordEnv() != null)) {
      throw new IllegalArgumentException(
          "trust_store is for transport tls only: remove it or use transport: tls");
    }
    SyslogTarget.Builder b = SyslogTarget.builder().to(t, s.host(), s.port());
    if (s.facility() != null) {
      b.facility(Facility.parse(s.facility()));
    }
    if (s.queue() != null) {
      b.queueCapacity(s.queue());
    }
    if (s.maxMessage() != null) {
      b.maxMessageBytes(s.maxMessage());
    }
    return new Sink(
        where,
        b.build(),
        s.trustStore() == null ? null : Path.of(s.trustStore()),
        s.trustStoreType() == null ? "PKCS12" : s.trustStoreType(),
        s.trustStorePasswordEnv(),
        null,
        Map.of());
  }

  private static Sink otlp(SinkShape s, String where) {
    refuse("otlp", "transport", s.transport());
    refuse("otlp", "host", s.host());
    refuse("otlp", "port", s.port());
    refuse("otlp", "facility", s.facility());
    refuse("otlp", "trust_store", s.trustStore());
    refuse("otlp", "trust_store_type", s.trustStoreType());
    refuse("otlp", "trust_store_password_env", s.trustStorePasswordEnv());
    refuse("otlp", "max_message", s.maxMessage());
    if (s.endpoint() == null) {
      throw new IllegalArgumentException(
          "an otlp sink needs endpoint, e.g. {type: otlp, endpoint:"
              + " \"http://otel-collector:4318/v1/logs\"}");
    }
    OtlpTarget.Builder b = OtlpTarget.builder(s.endpoint());
    if (s.timeout() != null) {
      b.timeout(ServerConfig.duration("timeout", s.timeout()));
    }
    if (s.compression() != null) {
      b.compression(s.compression());
    }
    if (s.queue() != null) {
      b.queueCapacity(s.queue());
    }
    Map<String, String> headersEnv =
        s.headersEnv() == null ? Map.of() : new LinkedHashMap<>(s.headersEnv());
    for (Map.Entry<String, String> h : headersEnv.entrySet()) {
      // Checks the header name now; the value comes from the environment at start.
      b.header(h.getKey(), "");
      if (h.getValue() == null || !h.getValue().matches("[A-Za-z_][A-Za-z0-9_]{0,127}")) {
        throw new IllegalArgumentException(
            "headers_env."
                + h.getKey()
                + " must name an environment variable (e.g. OTLP_AUTH_HEADER), not hold the"
                + " value: secrets stay out of server.yaml");
      }
    }
    return new Sink(where, null, null, "PKCS12", null, b.build(), headersEnv);
  }

  private static void refuse(String type, String key, @Nullable Object value) {
    if (value != null) {
      throw new IllegalArgumentException(
          "key '" + key + "' does not apply to type " + type + ": remove it");
    }
  }
}
