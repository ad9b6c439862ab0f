package io.agentnest.audit;

import java.util.ServiceLoader;

/**
 * What {@link AuditSinks#syslog} and {@link AuditSinks#otlp} call: makes the shipping sinks. The
 * one implementation ships with agentnest-core, found with {@link ServiceLoader} under {@code
 * META-INF/services/io.agentnest.audit.AuditShipper}, so that the audit API does not depend on the
 * implementation's package. It is the audit package's own SPI: it lives beside the sinks it makes,
 * not in {@code io.agentnest.spi}, so that neither package imports the other.
 */
public interface AuditShipper {
  ShippingSink syslog(SyslogTarget target);

  /**
   * @throws IllegalStateException when the OpenTelemetry exporter is not on the class path
   */
  ShippingSink otlp(OtlpTarget target);

  /** The implementation on the class path. */
  static AuditShipper load() {
    return ServiceLoader.load(AuditShipper.class, AuditShipper.class.getClassLoader())
        .findFirst()
        .orElseThrow(
            () ->
                new IllegalStateException(
                    "no io.agentnest.audit.AuditShipper on the class path: put agentnest-core's jar"
                        + " (with its META-INF/services) on the class path"));
  }
}
