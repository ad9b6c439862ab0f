package io.agentnest.spi;

import io.agentnest.audit.AuditSinks;
import io.agentnest.audit.OtlpTarget;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.SyslogTarget;
import java.util.ServiceLoader;

/**
 * What {@link AuditSinks#syslog} and {@link AuditSinks#otlp} call: makes the shipping sinks. The
 * one implementation ships with agentnest-core, found with {@link ServiceLoader} under {@code
 * META-INF/services/io.agentnest.spi.AuditShipper}, so that the audit API does not depend on the
 * implementation's package.
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
                    "no io.agentnest.spi.AuditShipper on the class path: put agentnest-core's jar"
                        + " (with its META-INF/services) on the class path"));
  }
}
