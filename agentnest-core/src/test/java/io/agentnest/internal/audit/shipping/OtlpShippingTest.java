package io.agentnest.internal.audit.shipping;

import static io.agentnest.internal.audit.shipping.Collectors.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditSinks;
import io.agentnest.audit.OtlpTarget;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.ShippingStats;
import io.opentelemetry.proto.logs.v1.SeverityNumber;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** OTLP/HTTP logs shipping against a receiver this test starts on loopback. */
class OtlpShippingTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  void oneLogRecordPerAuditRecordWithItsAttributes(@TempDir Path dir) throws Exception {
    try (OtlpCollector c = new OtlpCollector();
        AuditLog log = AuditLog.open(dir)) {
      ShippingSink sink =
          AuditSinks.otlp(
              OtlpTarget.builder(c.endpoint()).header("Authorization", "Bearer s3cret").build());
      assertThat(OtlpTarget.builder(c.endpoint()).header("Authorization", "x").build().toString())
          .doesNotContain("x]")
          .contains("Authorization");
      log.addSink(sink);
      AuditEvent created =
          log.record("sandbox.created", "sb1", Map.of("image", "python", "tenant", "acme"));
      AuditEvent violation =
          log.record("policy.violation", "sb1", Map.of("what", "x\n<13>1 forged"));
      assertThat(await(() -> c.received.size() == 2, WAIT)).isTrue();
      OtlpCollector.Received first = c.received.get(0);
      OtlpCollector.Received second = c.received.get(1);
      assertThat(first.resource()).containsEntry("service.name", "agentnest");
      assertThat(first.headers()).containsEntry("authorization", "Bearer s3cret");
      assertThat(first.log().getBody().getStringValue()).isEqualTo(created.toJson());
      assertThat(first.attr("agentnest.seq")).isEqualTo(String.valueOf(created.seq()));
      assertThat(first.attr("agentnest.type")).isEqualTo("sandbox.created");
      assertThat(first.attr("agentnest.sandbox")).isEqualTo("sb1");
      assertThat(first.attr("agentnest.tenant")).isEqualTo("acme");
      assertThat(first.attr("agentnest.hash")).isEqualTo(created.hash());
      assertThat(first.log().getTimeUnixNano())
          .isEqualTo(
              TimeUnit.SECONDS.toNanos(created.time().getEpochSecond()) + created.time().getNano());
      assertThat(first.log().getSeverityNumber()).isEqualTo(SeverityNumber.SEVERITY_NUMBER_INFO);
      // The tenant learned from sandbox.created tags the sandbox's later records.
      assertThat(second.attr("agentnest.tenant")).isEqualTo("acme");
      assertThat(second.log().getSeverityNumber()).isEqualTo(SeverityNumber.SEVERITY_NUMBER_WARN);
      assertThat(AuditEvent.fromJson(second.log().getBody().getStringValue())).isEqualTo(violation);
      assertThat(await(() -> sink.stats().sent() == 2, WAIT)).isTrue();
    }
  }

  @Test
  void aFailingCollectorCostsCountedDropsThenAGapRecord() throws Exception {
    try (OtlpCollector c = new OtlpCollector()) {
      OtlpTarget t = OtlpTarget.builder(c.endpoint()).compression("none").build();
      Shipper sink =
          new Shipper(
              t.describe(),
              new OtlpTransport(t, "h"),
              20,
              Duration.ofSeconds(2),
              Duration.ofMillis(300));
      try {
        c.status.set(503);
        for (int i = 1; i <= 100; i++) {
          sink.accept(Events.exec(i));
        }
        assertThat(
                await(() -> sink.stats().dropped() >= 80 && sink.stats().lastError() != null, WAIT))
            .isTrue();
        ShippingStats down = sink.stats();
        assertThat(down.queued()).isLessThanOrEqualTo(20);
        assertThat(down.sent() + down.dropped() + down.queued()).isEqualTo(100);
        assertThat(c.received).isEmpty();

        c.status.set(200);
        // The queue still holds what came while the collector failed; 101 may find it full.
        sink.accept(Events.exec(101));
        assertThat(await(() -> sink.stats().queued() == 0 && sink.stats().gaps() >= 1, WAIT))
            .isTrue();
        sink.accept(Events.exec(102));
        assertThat(
                await(
                    () -> {
                      ShippingStats s = sink.stats();
                      return s.queued() == 0 && s.sent() + s.dropped() == 102;
                    },
                    WAIT))
            .isTrue();
        ShippingStats after = sink.stats();
        assertThat(await(() -> c.received.size() == after.sent() + after.gaps(), WAIT)).isTrue();
        long gapDropped = 0;
        for (OtlpCollector.Received r : c.received) {
          if ("shipping.gap".equals(r.attr("agentnest.type"))) {
            gapDropped += Long.parseLong(r.attr("agentnest.dropped"));
            assertThat(r.log().getSeverityNumber()).isEqualTo(SeverityNumber.SEVERITY_NUMBER_WARN);
          }
        }
        assertThat(gapDropped).isEqualTo(after.dropped());
        assertThat(c.received.get(c.received.size() - 1).attr("agentnest.seq")).isEqualTo("102");
      } finally {
        sink.close();
      }
    }
  }
}
