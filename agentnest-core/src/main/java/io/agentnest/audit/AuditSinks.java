package io.agentnest.audit;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Built-in sinks. */
public final class AuditSinks {
  private AuditSinks() {}

  /**
   * One JSON object per line ({@link AuditEvent#toJson()}), the format Fluent Bit, Vector, Loki's
   * promtail and most collectors read. The stream is flushed after each record and closed with the
   * sink.
   */
  public static AuditSink jsonLines(OutputStream out) {
    return new JsonLines(out, true);
  }

  /** Appends JSON lines to a file (created when missing), e.g. one a collector tails. */
  public static AuditSink jsonLines(Path file) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      OutputStream os =
          Files.newOutputStream(
              file, StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
      return new JsonLines(new BufferedOutputStream(os, 1 << 16), true);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open audit sink file " + file, e);
    }
  }

  /**
   * Logs each record at INFO on the logger {@code io.agentnest.audit}, the JSON line as message.
   */
  public static AuditSink slf4j() {
    Logger log = LoggerFactory.getLogger("io.agentnest.audit");
    return e -> {
      if (log.isInfoEnabled()) {
        log.info(e.toJson());
      }
    };
  }

  /**
   * Ships every record to a syslog collector (RFC 5424 over UDP, TCP or TLS). The sink queues and
   * returns at once; one daemon thread sends, reconnects with a backoff capped at 30 s, and counts
   * what it has to drop ({@link ShippingSink#stats()}). Close it (or the log it is added to) to
   * flush.
   */
  public static ShippingSink syslog(SyslogTarget target) {
    return AuditShipper.load().syslog(target);
  }

  /**
   * Ships every record to an OpenTelemetry collector as OTLP/HTTP logs, with the same queue, drop
   * counting and reconnects as {@link #syslog}. Needs {@code
   * io.opentelemetry:opentelemetry-exporter-otlp} and {@code opentelemetry-exporter-sender-jdk} on
   * the class path (optional dependencies of agentnest-core).
   *
   * @throws IllegalStateException naming the missing jars when they are absent
   */
  public static ShippingSink otlp(OtlpTarget target) {
    return AuditShipper.load().otlp(target);
  }

  private static final class JsonLines implements AuditSink {
    private final OutputStream out;
    private final boolean flush;

    JsonLines(OutputStream out, boolean flush) {
      this.out = out;
      this.flush = flush;
    }

    @Override
    public synchronized void accept(AuditEvent e) {
      try {
        out.write((e.toJson() + "\n").getBytes(StandardCharsets.UTF_8));
        if (flush) {
          out.flush();
        }
      } catch (IOException ex) {
        throw new UncheckedIOException("audit sink write failed", ex);
      }
    }

    @Override
    public synchronized void close() {
      try {
        out.close();
      } catch (IOException ex) {
        throw new UncheckedIOException("audit sink close failed", ex);
      }
    }
  }
}
