package io.agentnest.cli;

import static io.agentnest.cli.ConfigCommandTest.cli;
import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code agentnest audit verify} over a rotated trail, in-process (no Docker needed). */
class AuditVerifyCommandTest {
  private static final String SB = "9a" + "0".repeat(62);

  private static String rotatedTrail(Path dir) {
    try (AuditLog log = AuditLog.open(dir, new AuditLog.Options(64 << 10, 0))) {
      for (int i = 0; i < 1500; i++) {
        log.record(AuditEvent.EXEC_STARTED, SB, Map.of("command", "echo " + i));
      }
      return log.lastHash();
    }
  }

  @Test
  void verifyChecksTheChainAcrossRotatedFiles(@TempDir Path dir) {
    String last = rotatedTrail(dir);
    assertThat(dir.resolve("events-000003.jsonl")).exists();

    ConfigCommandTest.Run r = cli("audit", "verify", "--dir", dir.toString());

    assertThat(r.exit()).as(r.out() + r.err()).isEqualTo(ExitCodes.OK);
    assertThat(r.out()).isEqualTo("ok: 1500 records, chain intact; last hash " + last + "\n");
  }

  @Test
  void verifyFailsWhenAMiddleFileIsRemovedOrTwoAreSwapped(@TempDir Path dir) throws Exception {
    rotatedTrail(dir);
    Path two = dir.resolve("events-000002.jsonl");
    Path three = dir.resolve("events-000003.jsonl");
    Path aside = dir.resolve("aside");

    Files.move(two, aside);
    ConfigCommandTest.Run removed = cli("audit", "verify", "--dir", dir.toString());
    assertThat(removed.exit()).isEqualTo(ExitCodes.FAILED);
    assertThat(removed.out())
        .startsWith(
            "FAILED: file events-000002.jsonl is missing between events-000001.jsonl and"
                + " events-000003.jsonl");

    Files.move(three, two);
    Files.move(aside, three);
    ConfigCommandTest.Run swapped = cli("audit", "verify", "--dir", dir.toString(), "--json");
    assertThat(swapped.exit()).isEqualTo(ExitCodes.FAILED);
    assertThat(swapped.out())
        .contains("\"ok\":false")
        .contains("events-000002.jsonl line 1 (seq ")
        .contains("records reordered");
  }

  @Test
  void aDirectoryWithoutATrailIsAFailure(@TempDir Path dir) {
    ConfigCommandTest.Run r = cli("audit", "verify", "--dir", dir.toString());
    assertThat(r.exit()).isEqualTo(ExitCodes.FAILED);
    assertThat(r.out()).contains("no audit log in");
  }
}
