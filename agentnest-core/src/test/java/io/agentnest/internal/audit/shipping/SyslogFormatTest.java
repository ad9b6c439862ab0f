package io.agentnest.internal.audit.shipping;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.SyslogTarget.Facility;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

class SyslogFormatTest {
  private final SyslogFormat format = new SyslogFormat(Facility.AUTHPRIV.code(), "host-1", 4242);

  @Test
  void writesAnRfc5424MessageWithOurStructuredData() {
    byte[] m =
        format.message(
            new Shipment(Events.event(17, "exec.started", "sb1", Map.of("command", "ls")), "acme"),
            65536);
    String s = new String(m, StandardCharsets.UTF_8);
    assertThat(s)
        .startsWith(
            "<86>1 2026-12-04T21:00:00.140456Z host-1 agentnest 4242 exec.started"
                + " [agentnest@32473 seq=\"17\" sandbox=\"sb1\" tenant=\"acme\" hash=\"");
    SyslogFrames.Message p = SyslogFrames.parse(m);
    assertThat(p.pri()).isEqualTo(10 * 8 + 6);
    assertThat(p.params()).containsEntry("seq", "17").containsEntry("tenant", "acme");
    assertThat(AuditEvent.fromJson(p.msg()).seq()).isEqualTo(17);
  }

  @Test
  void severityFollowsTheEventType() {
    assertThat(pri(Events.event(1, AuditEvent.POLICY_VIOLATION, "s", Map.of()))).isEqualTo(84);
    assertThat(pri(Events.event(1, AuditEvent.NETWORK_ATTEMPT, "s", Map.of("decision", "denied"))))
        .isEqualTo(84);
    assertThat(pri(Events.event(1, AuditEvent.NETWORK_ATTEMPT, "s", Map.of("decision", "allow"))))
        .isEqualTo(86);
    assertThat(pri(Events.event(1, AuditEvent.APPROVAL_DECIDED, "s", Map.of()))).isEqualTo(85);
    assertThat(pri(Events.event(1, AuditEvent.FILE_READ, "s", Map.of()))).isEqualTo(86);
    SyslogFormat local0 = new SyslogFormat(Facility.LOCAL0.code(), "h", 1);
    assertThat(SyslogFrames.parse(local0.message(new Shipment(Events.exec(1), null), 4096)).pri())
        .isEqualTo(16 * 8 + 6);
  }

  private int pri(AuditEvent e) {
    return SyslogFrames.parse(format.message(new Shipment(e, null), 4096)).pri();
  }

  @Test
  void escapesSdParamValuesPerRfc5424() {
    byte[] m =
        format.message(
            new Shipment(Events.event(3, "file.read", "a\"b\\c]d", Map.of()), "t]"), 4096);
    String s = new String(m, StandardCharsets.UTF_8);
    assertThat(s).contains("sandbox=\"a\\\"b\\\\c\\]d\"").contains("tenant=\"t\\]\"");
    assertThat(SyslogFrames.parse(m).params())
        .containsEntry("sandbox", "a\"b\\c]d")
        .containsEntry("tenant", "t]");
  }

  @Test
  void aForgedMessageInAFieldStaysInsideItsRecord() throws Exception {
    String forged = "x\n<13>1 2026-12-04T00:00:00Z evil agentnest 1 forged - forged\r\n";
    AuditEvent e =
        Events.event(
            5, "exec.started", "sb\n<13>1 forged", Map.of("command", forged, "x", "\u2028"));
    byte[] m = format.message(new Shipment(e, "t\u0085"), 65536);
    byte[] frame = SyslogFormat.octetCounted(m);
    List<byte[]> frames = SyslogFrames.frames(frame);
    assertThat(frames).hasSize(1);
    SyslogFrames.Message p = SyslogFrames.parse(frames.get(0));
    assertThat(p.msgId()).isEqualTo("exec.started");
    // The JSON line is still the record: the escapes are JSON escapes.
    AuditEvent back = AuditEvent.fromJson(p.msg());
    assertThat(back.data()).containsEntry("command", forged);
    assertThat(p.params().get("sandbox")).isEqualTo("sb\\u000a<13>1 forged");
  }

  @Test
  void cutsLongMessagesOnACharacterBoundary() {
    String big = "é".repeat(5000);
    byte[] m =
        format.message(
            new Shipment(Events.event(9, "file.write", "s", Map.of("p", big)), null), 2048);
    assertThat(m.length).isLessThanOrEqualTo(2048).isGreaterThan(2040);
    String s = new String(m, StandardCharsets.UTF_8);
    assertThat(s.getBytes(StandardCharsets.UTF_8)).isEqualTo(m);
    SyslogFrames.parse(m);
  }

  @Test
  void gapRecordNamesTheCountAndRange() {
    byte[] m = format.gap(new Gap(12, 100, 140, Instant.parse("2026-12-04T21:00:00Z")), 4096);
    SyslogFrames.Message p = SyslogFrames.parse(m);
    assertThat(p.msgId()).isEqualTo("shipping.gap");
    assertThat(p.pri()).isEqualTo(84);
    assertThat(p.params())
        .containsEntry("dropped", "12")
        .containsEntry("first_seq", "100")
        .containsEntry("last_seq", "140");
    assertThat(p.msg()).contains("\"dropped\":12");
  }

  @Property(tries = 300)
  void anyStringsMakeExactlyOneWellFormedFrame(
      @ForAll @StringLength(max = 60) String type,
      @ForAll @StringLength(max = 200) String sandbox,
      @ForAll @StringLength(max = 80) String tenant,
      @ForAll @StringLength(max = 300) String value)
      throws Exception {
    AuditEvent e = Events.event(42, type, sandbox, Map.of("v", value, value, "k"));
    byte[] msg = format.message(new Shipment(e, tenant.isEmpty() ? null : tenant), 65536);
    List<byte[]> frames = SyslogFrames.frames(SyslogFormat.octetCounted(msg));
    assertThat(frames).hasSize(1);
    SyslogFrames.Message p = SyslogFrames.parse(frames.get(0));
    assertThat(p.params().get("seq")).isEqualTo("42");
    assertThat(p.params().get("sandbox")).isEqualTo(expectedParam(sandbox));
    assertThat(AuditEvent.fromJson(p.msg()).data()).isEqualTo(e.data());
  }

  // What the formatter promises for a param value: cut to 128 chars, controls as \\uXXXX.
  private static String expectedParam(String v) {
    int n = Math.min(v.length(), SyslogFormat.MAX_PARAM_CHARS);
    if (n < v.length() && Character.isHighSurrogate(v.charAt(n - 1))) {
      n--;
    }
    return SyslogFormat.escapeControls(v.substring(0, n));
  }
}
