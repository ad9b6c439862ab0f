package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditShipper;
import io.agentnest.audit.OtlpTarget;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.SyslogTarget;

/** The {@link AuditShipper} agentnest-core ships (found with ServiceLoader). */
public final class Shippers implements AuditShipper {
  private static final String EXPORTER =
      "io.opentelemetry.exporter.otlp.http.logs.OtlpHttpLogRecordExporter";
  private static final String JDK_SENDER =
      "io.opentelemetry.exporter.sender.jdk.internal.JdkHttpSenderProvider";

  @Override
  public ShippingSink syslog(SyslogTarget t) {
    SyslogTransport transport = new SyslogTransport(t, SyslogFormat.local(t.facility().code()));
    return new Shipper(t.describe(), transport, t.queueCapacity(), t.flushTimeout());
  }

  @Override
  public ShippingSink otlp(OtlpTarget t) {
    requireClass(EXPORTER, "opentelemetry-exporter-otlp");
    requireClass(JDK_SENDER, "opentelemetry-exporter-sender-jdk");
    return new Shipper(t.describe(), Otlp.transport(t), t.queueCapacity(), t.flushTimeout());
  }

  private static void requireClass(String name, String artifact) {
    try {
      Class.forName(name, false, Shippers.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(
          "OTLP audit shipping needs io.opentelemetry:"
              + artifact
              + " (1.68.0, with opentelemetry-exporter-otlp and opentelemetry-exporter-sender-jdk)"
              + " on the class path: add it to your build (agentnest-core declares it optional)",
          e);
    }
  }

  // Loaded only once the OpenTelemetry jars are known to be there.
  private static final class Otlp {
    static Transport transport(OtlpTarget t) {
      return new OtlpTransport(t, SyslogFormat.localHostName());
    }
  }
}
