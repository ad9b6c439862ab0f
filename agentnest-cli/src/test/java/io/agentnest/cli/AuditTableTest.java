package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.audit.AuditEvent;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code audit} table shows what a sandbox chose (hosts, targets, paths) escaped. */
class AuditTableTest {
  private static AuditEvent event(String type, Map<String, Object> data) {
    return new AuditEvent(
        1,
        Instant.parse("2026-12-03T10:00:00Z"),
        type,
        "0123456789abcdef",
        "test",
        data,
        AuditEvent.GENESIS,
        AuditEvent.GENESIS,
        AuditEvent.SCHEMA);
  }

  private static String row(AuditEvent e) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    AuditTable.row(new PrintStream(b, true, StandardCharsets.UTF_8), e);
    return b.toString(StandardCharsets.UTF_8);
  }

  @Test
  void hostileHostsAndTargetsCannotHideOrRepaintRows() {
    Map<String, Object> net = new LinkedHashMap<>();
    net.put("decision", "APPROVED");
    net.put("host", "evil.example\u001b[8m\u001b[1A\rpypi.org\u202e");
    net.put("port", 443);
    Map<String, Object> ask = new LinkedHashMap<>();
    ask.put("kind", "file.delete");
    ask.put("target", "/workspace/x\u001b]52;c;aGk=\u0007\n2026-12-03 forged row\u009b");
    for (AuditEvent e :
        new AuditEvent[] {
          event(AuditEvent.NETWORK_ATTEMPT, net), event("approval.requested", ask)
        }) {
      String shown = row(e);
      assertThat(shown).endsWith("\n");
      assertThat(shown.substring(0, shown.length() - 1))
          .doesNotContain("\u001b", "\r", "\n", "\u0007", "\u202e", "\u009b");
    }
    assertThat(row(event(AuditEvent.NETWORK_ATTEMPT, net)))
        .contains("evil.example\\x1b[8m\\x1b[1A\\rpypi.org\\u202e:443");
  }

  @Test
  void columnsStayAlignedForTheLongestTypeAndAFullSandboxId() {
    Map<String, Object> data = Map.of("secret", "GITHUB_TOKEN", "host", "api.example.com");
    String header;
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    AuditTable.header(new PrintStream(b, true, StandardCharsets.UTF_8));
    header = b.toString(StandardCharsets.UTF_8);
    int summaryAt = header.indexOf("SUMMARY");
    for (String type : new String[] {"network.placeholder_leak", "sandbox.created"}) {
      String shown = row(event(type, data));
      // The summary starts where the header says, whatever the type and id lengths.
      assertThat(shown.charAt(summaryAt - 1)).isEqualTo(' ');
      assertThat(shown.charAt(summaryAt)).isNotEqualTo(' ');
      assertThat(shown).contains("0123456789ab  ").doesNotContain("0123456789abc");
    }
  }
}
