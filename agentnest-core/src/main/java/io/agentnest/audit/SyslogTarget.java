package io.agentnest.audit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * A syslog collector for {@link AuditSinks#syslog}: RFC 5424 messages over UDP (RFC 5426), TCP with
 * octet counting (RFC 6587 §3.4.1) or TLS (RFC 5425). Built with {@link #builder}, which checks
 * every value.
 *
 * @param transport how messages travel
 * @param host the collector's host name or address (TLS checks the certificate against it)
 * @param port the collector's port
 * @param facility the PRI facility, {@link Facility#AUTHPRIV} by default: audit records are
 *     security-sensitive, and syslog daemons keep authpriv in files only root reads
 * @param trustStore the certificates a TLS collector is checked against; {@code null}: the JDK's
 * @param queueCapacity records held while the collector is slow or down (default {@value
 *     #DEFAULT_QUEUE}); more are dropped and counted
 * @param maxMessageBytes a longer message is cut (on a UTF-8 boundary): default {@value
 *     #DEFAULT_UDP_MAX} for UDP (what RFC 5426 receivers should accept), {@value
 *     #DEFAULT_STREAM_MAX} for TCP and TLS
 * @param connectTimeout bound on one connection attempt
 * @param flushTimeout how long {@link ShippingSink#close} keeps sending what is queued
 */
public record SyslogTarget(
    Transport transport,
    String host,
    int port,
    Facility facility,
    @Nullable KeyStore trustStore,
    int queueCapacity,
    int maxMessageBytes,
    Duration connectTimeout,
    Duration flushTimeout) {

  public static final int DEFAULT_QUEUE = 10_000;
  public static final int DEFAULT_UDP_MAX = 2048;
  public static final int DEFAULT_STREAM_MAX = 65_536;

  /** How syslog messages travel. */
  public enum Transport {
    UDP,
    TCP,
    TLS;

    /** {@code udp}, {@code tcp} or {@code tls} (any case). */
    public static Transport parse(String text) {
      for (Transport t : values()) {
        if (t.name().equalsIgnoreCase(text.strip())) {
          return t;
        }
      }
      throw new IllegalArgumentException(
          "syslog transport '" + text + "' is unknown: use tls, tcp or udp");
    }
  }

  /** The facilities of RFC 5424 §6.2.1, with their codes. */
  public enum Facility {
    KERN(0),
    USER(1),
    MAIL(2),
    DAEMON(3),
    AUTH(4),
    SYSLOG(5),
    LPR(6),
    NEWS(7),
    UUCP(8),
    CRON(9),
    AUTHPRIV(10),
    FTP(11),
    NTP(12),
    SECURITY(13),
    CONSOLE(14),
    SOLARIS_CRON(15),
    LOCAL0(16),
    LOCAL1(17),
    LOCAL2(18),
    LOCAL3(19),
    LOCAL4(20),
    LOCAL5(21),
    LOCAL6(22),
    LOCAL7(23);

    private final int code;

    Facility(int code) {
      this.code = code;
    }

    public int code() {
      return code;
    }

    /** A name as syslog writes it ({@code authpriv}, {@code local0}) or the code ({@code 10}). */
    public static Facility parse(String text) {
      String t = text.strip().toUpperCase(Locale.ROOT).replace('-', '_');
      for (Facility f : values()) {
        if (f.name().equals(t) || String.valueOf(f.code).equals(t)) {
          return f;
        }
      }
      throw new IllegalArgumentException(
          "syslog facility '"
              + text
              + "' is unknown: use one of "
              + Arrays.stream(values())
                  .map(f -> f.name().toLowerCase(Locale.ROOT))
                  .collect(Collectors.joining(", "))
              + " (or its code 0-23)");
    }
  }

  public SyslogTarget {
    Objects.requireNonNull(transport, "transport");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(facility, "facility");
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    Objects.requireNonNull(flushTimeout, "flushTimeout");
    if (host.isBlank() || host.chars().anyMatch(c -> c <= ' ' || c > '~')) {
      throw new IllegalArgumentException(
          "syslog host '" + host + "' is not a host name or address: write e.g. logs.example.org");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException(
          "syslog port " + port + " is out of range: use 1-65535 (6514 for TLS, 514 for UDP/TCP)");
    }
    if (trustStore != null && transport != Transport.TLS) {
      throw new IllegalArgumentException(
          "a syslog trust store is only used with transport tls: remove it or use tls");
    }
    if (queueCapacity < 1 || queueCapacity > 1_000_000) {
      throw new IllegalArgumentException(
          "syslog queue " + queueCapacity + " is out of range: use 1-1000000");
    }
    if (maxMessageBytes < 480
        || maxMessageBytes > (transport == Transport.UDP ? 65_000 : 1 << 20)) {
      throw new IllegalArgumentException(
          "syslog max message "
              + maxMessageBytes
              + " bytes is out of range: use 480-"
              + (transport == Transport.UDP ? "65000 for UDP" : "1048576"));
    }
    if (connectTimeout.isNegative() || connectTimeout.isZero() || flushTimeout.isNegative()) {
      throw new IllegalArgumentException(
          "syslog timeouts must be positive: e.g. connect 5s, flush 5s");
    }
  }

  /** {@code syslog+tls://host:port}: names the collector in stats and logs. */
  public String describe() {
    return "syslog+" + transport.name().toLowerCase(Locale.ROOT) + "://" + host + ":" + port;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link SyslogTarget}; {@link #build} checks the values. */
  public static final class Builder {
    private Transport transport = Transport.TLS;
    private @Nullable String host;
    private int port = -1;
    private Facility facility = Facility.AUTHPRIV;
    private @Nullable KeyStore trustStore;
    private int queueCapacity = DEFAULT_QUEUE;
    private int maxMessageBytes = -1;
    private Duration connectTimeout = Duration.ofSeconds(5);
    private Duration flushTimeout = Duration.ofSeconds(5);

    private Builder() {}

    /** TLS (RFC 5425) to {@code host:port}: the certificate must name {@code host}. */
    public Builder tls(String host, int port) {
      return to(Transport.TLS, host, port);
    }

    public Builder tcp(String host, int port) {
      return to(Transport.TCP, host, port);
    }

    public Builder udp(String host, int port) {
      return to(Transport.UDP, host, port);
    }

    public Builder to(Transport transport, String host, int port) {
      this.transport = Objects.requireNonNull(transport, "transport");
      this.host = Objects.requireNonNull(host, "host");
      this.port = port;
      return this;
    }

    public Builder facility(Facility f) {
      this.facility = Objects.requireNonNull(f, "facility");
      return this;
    }

    /** The certificates a TLS collector is checked against (instead of the JDK's). */
    public Builder trustStore(KeyStore ks) {
      this.trustStore = Objects.requireNonNull(ks, "trustStore");
      return this;
    }

    /**
     * Reads a PKCS12 or JKS trust store now, so that a wrong path or password fails here.
     *
     * @param password {@code null} when the store has none
     */
    public Builder trustStore(Path file, String type, char @Nullable [] password) {
      try (InputStream in = Files.newInputStream(file)) {
        KeyStore ks = KeyStore.getInstance(type);
        ks.load(in, password);
        if (ks.size() == 0) {
          throw new IllegalArgumentException(
              "syslog trust store " + file + " holds no certificate: add the collector's CA");
        }
        this.trustStore = ks;
      } catch (IOException | GeneralSecurityException e) {
        throw new IllegalArgumentException(
            "cannot read syslog trust store "
                + file
                + " as "
                + type
                + " ("
                + e.getMessage()
                + "): check the path, the type (PKCS12 or JKS) and the password",
            e);
      }
      return this;
    }

    public Builder queueCapacity(int n) {
      this.queueCapacity = n;
      return this;
    }

    public Builder maxMessageBytes(int n) {
      this.maxMessageBytes = n;
      return this;
    }

    public Builder connectTimeout(Duration d) {
      this.connectTimeout = Objects.requireNonNull(d, "connectTimeout");
      return this;
    }

    public Builder flushTimeout(Duration d) {
      this.flushTimeout = Objects.requireNonNull(d, "flushTimeout");
      return this;
    }

    public SyslogTarget build() {
      if (host == null) {
        throw new IllegalArgumentException(
            "a syslog target needs a collector: call tls(host, port), tcp(...) or udp(...)");
      }
      int max =
          maxMessageBytes > 0
              ? maxMessageBytes
              : transport == Transport.UDP ? DEFAULT_UDP_MAX : DEFAULT_STREAM_MAX;
      return new SyslogTarget(
          transport,
          host,
          port,
          facility,
          trustStore,
          queueCapacity,
          max,
          connectTimeout,
          flushTimeout);
    }
  }
}
