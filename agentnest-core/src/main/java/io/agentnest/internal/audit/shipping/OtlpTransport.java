package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.OtlpTarget;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.common.Value;
import io.opentelemetry.api.logs.Severity;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.exporter.otlp.http.logs.OtlpHttpLogRecordExporter;
import io.opentelemetry.exporter.otlp.http.logs.OtlpHttpLogRecordExporterBuilder;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.logs.data.Body;
import io.opentelemetry.sdk.logs.data.LogRecordData;
import io.opentelemetry.sdk.resources.Resource;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * OTLP/HTTP logs through the OpenTelemetry SDK's exporter, called directly with our batches (no SDK
 * batch processor, whose own queue would drop without our count): an export the exporter reports
 * failed is a dropped batch. The exporter's own retries are off; {@link Shipper}'s backoff decides
 * when to try again.
 */
final class OtlpTransport implements Transport {
  static final AttributeKey<Long> SEQ = AttributeKey.longKey("agentnest.seq");
  static final AttributeKey<String> TYPE = AttributeKey.stringKey("agentnest.type");
  static final AttributeKey<String> SANDBOX = AttributeKey.stringKey("agentnest.sandbox");
  static final AttributeKey<String> TENANT = AttributeKey.stringKey("agentnest.tenant");
  static final AttributeKey<String> HASH = AttributeKey.stringKey("agentnest.hash");
  static final AttributeKey<String> ACTOR = AttributeKey.stringKey("agentnest.actor");
  static final AttributeKey<Long> DROPPED = AttributeKey.longKey("agentnest.dropped");
  static final AttributeKey<Long> FIRST_SEQ = AttributeKey.longKey("agentnest.first_seq");
  static final AttributeKey<Long> LAST_SEQ = AttributeKey.longKey("agentnest.last_seq");

  private static final InstrumentationScopeInfo SCOPE =
      InstrumentationScopeInfo.create("io.agentnest.audit");

  private final OtlpTarget target;
  private final Resource resource;
  private volatile @Nullable OtlpHttpLogRecordExporter exporter;

  OtlpTransport(OtlpTarget target, String hostName) {
    this.target = target;
    this.resource =
        Resource.create(
            Attributes.of(
                AttributeKey.stringKey("service.name"),
                "agentnest",
                AttributeKey.stringKey("host.name"),
                hostName));
  }

  @Override
  public void open() {
    if (exporter == null) {
      OtlpHttpLogRecordExporterBuilder b =
          OtlpHttpLogRecordExporter.builder()
              .setEndpoint(target.endpoint().toString())
              .setTimeout(target.timeout())
              .setConnectTimeout(target.timeout())
              .setCompression(target.compression())
              .setRetryPolicy(null);
      for (Map.Entry<String, String> h : target.headers().entrySet()) {
        b.addHeader(h.getKey(), h.getValue());
      }
      exporter = b.build();
    }
  }

  @Override
  public void send(List<Shipment> batch, @Nullable Gap gap) throws IOException {
    OtlpHttpLogRecordExporter x = exporter;
    if (x == null) {
      throw new IOException("the OTLP exporter is closed");
    }
    List<LogRecordData> records = new ArrayList<>(batch.size() + 1);
    if (gap != null) {
      records.add(gapRecord(gap));
    }
    for (Shipment s : batch) {
      records.add(record(s));
    }
    CompletableResultCode r = x.export(records);
    r.join(target.timeout().toMillis() + 1_000, TimeUnit.MILLISECONDS);
    if (!r.isSuccess()) {
      Throwable t = r.getFailureThrowable();
      throw new IOException(
          "OTLP export to "
              + target.describe()
              + " failed"
              + (r.isDone() ? "" : " (timed out)")
              + (t == null ? "" : ": " + t.getMessage()),
          t);
    }
  }

  private LogRecordData record(Shipment s) {
    AuditEvent e = s.event();
    AttributesBuilder a = Attributes.builder().put(SEQ, e.seq()).put(TYPE, e.type());
    if (e.sandboxId() != null) {
      a.put(SANDBOX, e.sandboxId());
    }
    if (s.tenant() != null) {
      a.put(TENANT, s.tenant());
    }
    a.put(HASH, e.hash()).put(ACTOR, e.actor());
    return new AuditLogRecord(
        resource, nanos(e.time()), SyslogSeverity.of(e), e.toJson(), a.build());
  }

  private LogRecordData gapRecord(Gap g) {
    Attributes a =
        Attributes.builder()
            .put(TYPE, Gap.TYPE)
            .put(DROPPED, g.dropped())
            .put(FIRST_SEQ, g.firstSeq())
            .put(LAST_SEQ, g.lastSeq())
            .build();
    return new AuditLogRecord(resource, nanos(g.time()), SyslogSeverity.WARNING, g.toJson(), a);
  }

  private static long nanos(Instant t) {
    return TimeUnit.SECONDS.toNanos(t.getEpochSecond()) + t.getNano();
  }

  @Override
  public void close() {
    // The exporter holds no connection of its own between exports: it is reused across failures
    // and released once, in shutdown.
  }

  @Override
  public void shutdown() {
    OtlpHttpLogRecordExporter x = exporter;
    exporter = null;
    if (x != null) {
      x.shutdown().join(2, TimeUnit.SECONDS);
    }
  }

  @SuppressWarnings("deprecation") // getBody is still abstract in the SDK's interface
  private record AuditLogRecord(
      Resource resource, long time, SyslogSeverity severity, String json, Attributes attributes)
      implements LogRecordData {
    @Override
    public Resource getResource() {
      return resource;
    }

    @Override
    public InstrumentationScopeInfo getInstrumentationScopeInfo() {
      return SCOPE;
    }

    @Override
    public long getTimestampEpochNanos() {
      return time;
    }

    @Override
    public long getObservedTimestampEpochNanos() {
      return time;
    }

    @Override
    public SpanContext getSpanContext() {
      return SpanContext.getInvalid();
    }

    @Override
    public Severity getSeverity() {
      return switch (severity) {
        case WARNING -> Severity.WARN;
        case NOTICE -> Severity.INFO2;
        case INFO -> Severity.INFO;
      };
    }

    @Override
    public String getSeverityText() {
      return severity.name();
    }

    @Override
    public Body getBody() {
      return Body.string(json);
    }

    @Override
    public Value<?> getBodyValue() {
      return Value.of(json);
    }

    @Override
    public Attributes getAttributes() {
      return attributes;
    }

    @Override
    public int getTotalAttributeCount() {
      return attributes.size();
    }
  }
}
