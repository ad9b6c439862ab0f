package io.agentnest.internal.audit.shipping;

import static io.agentnest.internal.audit.shipping.Collectors.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditSinks;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.ShippingStats;
import io.agentnest.audit.SyslogTarget;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Syslog shipping against collectors this test starts on loopback. */
class SyslogShippingTest {
  private static final String HOST = "127.0.0.1";
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String FORGED =
      "x\n<13>1 2026-12-04T00:00:00Z evil agentnest 1 forged - forged";

  @Test
  void udpSendsOneDatagramPerRecordAndAFieldCannotForgeAnother() throws Exception {
    try (Collectors.Udp c = new Collectors.Udp()) {
      ShippingSink sink = AuditSinks.syslog(SyslogTarget.builder().udp(HOST, c.port()).build());
      try {
        sink.accept(Events.exec(1));
        sink.accept(Events.event(2, "exec.started", "sb", Map.of("command", FORGED)));
        sink.accept(Events.exec(3));
        List<SyslogFrames.Message> got = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
          byte[] d = c.received.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
          assertThat(d).as("datagram %s", i).isNotNull();
          got.add(SyslogFrames.parse(d));
        }
        assertThat(got).extracting(m -> m.params().get("seq")).containsExactly("1", "2", "3");
        assertThat(AuditEvent.fromJson(got.get(1).msg()).data()).containsEntry("command", FORGED);
        assertThat(c.received.poll(300, TimeUnit.MILLISECONDS)).isNull();
        assertThat(await(() -> sink.stats().sent() == 3, WAIT)).isTrue();
      } finally {
        sink.close();
      }
    }
  }

  @Test
  void tcpShipsTheLocalChainInOrderWithOctetCounting(@TempDir Path dir) throws Exception {
    try (Collectors.Tcp c = new Collectors.Tcp(0, true);
        AuditLog log = AuditLog.open(dir)) {
      ShippingSink sink = AuditSinks.syslog(SyslogTarget.builder().tcp(HOST, c.port()).build());
      log.addSink(sink);
      List<AuditEvent> written = new ArrayList<>();
      written.add(log.record("exec.started", "sb1", Map.of("command", FORGED)));
      written.add(log.record("file.read", "sb1", Map.of("path", "/workspace/a\u2028b")));
      written.add(log.record("policy.violation", "sb1", Map.of("what", "x")));
      List<SyslogFrames.Message> got = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        byte[] f = c.received.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(f).as("frame %s", i).isNotNull();
        got.add(SyslogFrames.parse(f));
      }
      for (int i = 0; i < 3; i++) {
        assertThat(got.get(i).params())
            .containsEntry("seq", String.valueOf(written.get(i).seq()))
            .containsEntry("sandbox", "sb1")
            .containsEntry("hash", written.get(i).hash());
        assertThat(AuditEvent.fromJson(got.get(i).msg())).isEqualTo(written.get(i));
      }
      assertThat(got.get(2).pri()).isEqualTo(10 * 8 + 4);
      assertThat(c.errors).isEmpty();
    }
  }

  @Test
  void tlsShipsToACollectorWhoseCertificateNamesTheHost(@TempDir Path dir) throws Exception {
    Collectors.Cert cert = Collectors.Cert.selfSigned(HOST);
    Path trust = dir.resolve("trust.p12");
    try (OutputStream out = Files.newOutputStream(trust)) {
      cert.trustStore().store(out, "changeit".toCharArray());
    }
    try (Collectors.Tcp c = new Collectors.Tcp(cert.serverContext())) {
      ShippingSink sink =
          AuditSinks.syslog(
              SyslogTarget.builder()
                  .tls(HOST, c.port())
                  .trustStore(trust, "PKCS12", "changeit".toCharArray())
                  .build());
      try {
        for (int i = 1; i <= 3; i++) {
          sink.accept(Events.exec(i));
        }
        // A second batch after a pause goes over the same connection (the liveness probe on TLS).
        assertThat(await(() -> c.received.size() == 3, WAIT)).isTrue();
        Thread.sleep(700);
        sink.accept(Events.event(4, "exec.started", "sb", Map.of("command", FORGED)));
        assertThat(await(() -> c.received.size() == 4, WAIT)).isTrue();
        List<String> seqs = new ArrayList<>();
        for (byte[] f : c.received) {
          seqs.add(SyslogFrames.parse(f).params().get("seq"));
        }
        assertThat(seqs).containsExactly("1", "2", "3", "4");
        assertThat(c.connections()).isEqualTo(1);
        assertThat(sink.stats().dropped()).isZero();
      } finally {
        sink.close();
      }
    }
  }

  @Test
  void tlsRefusesACertificateForAnotherHost() throws Exception {
    Collectors.Cert cert = Collectors.Cert.selfSigned("collector.invalid");
    try (Collectors.Tcp c = new Collectors.Tcp(cert.serverContext())) {
      ShippingSink sink =
          AuditSinks.syslog(
              SyslogTarget.builder().tls(HOST, c.port()).trustStore(cert.trustStore()).build());
      try {
        sink.accept(Events.exec(1));
        assertThat(await(() -> sink.stats().lastError() != null, WAIT)).isTrue();
        ShippingStats s = sink.stats();
        assertThat(s.connected()).isFalse();
        assertThat(s.lastError()).containsIgnoringCase("subject alternative");
        assertThat(s.sent()).isZero();
        assertThat(c.received).isEmpty();
      } finally {
        sink.close();
      }
      assertThat(sink.stats().dropped()).isEqualTo(1);
    }
  }

  @Test
  void aDownCollectorCostsCountedDropsABoundedQueueAndAGapRecordWhenBack() throws Exception {
    int port;
    SyslogTarget target;
    Shipper sink;
    try (Collectors.Tcp first = new Collectors.Tcp(0, true)) {
      port = first.port();
      target = SyslogTarget.builder().tcp(HOST, port).queueCapacity(50).build();
      sink =
          new Shipper(
              target.describe(),
              new SyslogTransport(target, SyslogFormat.local(target.facility().code())),
              50,
              Duration.ofSeconds(2),
              Duration.ofMillis(400));
      for (int i = 1; i <= 5; i++) {
        sink.accept(Events.exec(i));
      }
      assertThat(await(() -> first.received.size() == 5, WAIT)).isTrue();
    }
    try {
      // The collector is gone: 200 more records, far more than the queue holds.
      for (int i = 6; i <= 205; i++) {
        sink.accept(Events.exec(i));
      }
      assertThat(await(() -> !sink.stats().connected() && sink.stats().dropped() > 0, WAIT))
          .isTrue();
      ShippingStats down = sink.stats();
      assertThat(down.queued()).isLessThanOrEqualTo(50);
      assertThat(down.dropped()).isGreaterThanOrEqualTo(150);
      assertThat(down.sent() + down.dropped() + down.queued()).isEqualTo(205);

      try (Collectors.Tcp back = new Collectors.Tcp(port, true)) {
        assertThat(
                await(
                    () -> {
                      ShippingStats s = sink.stats();
                      return s.queued() == 0 && s.sent() + s.dropped() == 205 && s.gaps() >= 1;
                    },
                    WAIT))
            .isTrue();
        for (int i = 206; i <= 210; i++) {
          sink.accept(Events.exec(i));
        }
        assertThat(await(() -> sink.stats().sent() + sink.stats().dropped() == 210, WAIT)).isTrue();
        ShippingStats after = sink.stats();
        long expectedFrames = after.sent() - 5 + after.gaps();
        assertThat(await(() -> back.received.size() == expectedFrames, WAIT)).isTrue();
        long gapDropped = 0;
        long lastSeq = 5;
        boolean sawGap = false;
        for (byte[] f : back.received) {
          SyslogFrames.Message m = SyslogFrames.parse(f);
          if (m.msgId().equals("shipping.gap")) {
            sawGap = true;
            gapDropped += Long.parseLong(m.params().get("dropped"));
          } else {
            long seq = Long.parseLong(m.params().get("seq"));
            assertThat(seq).isGreaterThan(lastSeq);
            lastSeq = seq;
          }
        }
        assertThat(sawGap).isTrue();
        assertThat(gapDropped).isEqualTo(after.dropped());
        assertThat(lastSeq).isEqualTo(210);
        assertThat(after.connected()).isTrue();
      }
    } finally {
      sink.close();
    }
  }

  @Test
  void closeSendsWhatIsQueuedBeforeItStops() throws Exception {
    try (Collectors.Tcp c = new Collectors.Tcp(0, true)) {
      ShippingSink sink = AuditSinks.syslog(SyslogTarget.builder().tcp(HOST, c.port()).build());
      for (int i = 1; i <= 2000; i++) {
        sink.accept(Events.exec(i));
      }
      sink.close();
      ShippingStats s = sink.stats();
      assertThat(s.sent()).isEqualTo(2000);
      assertThat(s.dropped()).isZero();
      assertThat(await(() -> c.received.size() == 2000, WAIT)).isTrue();
      sink.accept(Events.exec(2001));
      assertThat(sink.stats().dropped()).isEqualTo(1);
    }
  }

  @Test
  void aCollectorThatDoesNotReadNeverHoldsUpTheAuditLog(@TempDir Path dir) throws Exception {
    try (Collectors.Tcp stuck = new Collectors.Tcp(0, false);
        AuditLog log = AuditLog.open(dir)) {
      ShippingSink sink =
          AuditSinks.syslog(
              SyslogTarget.builder()
                  .tcp(HOST, stuck.port())
                  .queueCapacity(100)
                  .flushTimeout(Duration.ofSeconds(1))
                  .build());
      log.addSink(sink);
      String big = "y".repeat(4096);
      int n = 5000;
      // A hang guard, not a speed check: without the queue the writer would block on the socket.
      assertTimeoutPreemptively(
          Duration.ofMinutes(2),
          () -> {
            for (int i = 0; i < n; i++) {
              log.record("exec.started", "sb", Map.of("command", big));
            }
            log.flush();
          });
      ShippingStats s = sink.stats();
      assertThat(s.dropped()).isPositive();
      // The queue's 100 plus the batch stuck in the socket write (taken from the queue).
      assertThat(s.queued()).isLessThanOrEqualTo(200);
      assertThat(s.sent() + s.dropped() + s.queued()).isEqualTo(n);
      assertTimeoutPreemptively(Duration.ofSeconds(30), sink::close);
      log.removeSink(sink);
      ShippingStats closed = sink.stats();
      assertThat(closed.sent() + closed.dropped()).isEqualTo(n);
    }
  }
}
