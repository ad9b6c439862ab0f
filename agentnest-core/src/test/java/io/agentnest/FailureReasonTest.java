package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.FileOperationException.Reason;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class FailureReasonTest {

  @Test
  void everyFileReasonTheAgentNamesIsReadBackAsThatReason() {
    for (Reason r : Reason.values()) {
      assertThat(Reason.fromWire(r.code())).isSameAs(r);
    }
  }

  @Test
  void aCodeTheHostDoesNotKnowBecomesAnAgentFailureNotATrustedReason() {
    assertThat(Reason.fromWire("NOT_FOUND\n")).isSameAs(Reason.AGENT);
    assertThat(Reason.fromWire("not_found")).isSameAs(Reason.AGENT);
    assertThat(Reason.fromWire("")).isSameAs(Reason.AGENT);
    assertThat(Reason.fromWire("UNKNOWN_OP")).isSameAs(Reason.AGENT);
  }

  @Test
  void theCodeIsTheStableWireSpellingOfTheReason() {
    FileOperationException e = new FileOperationException(Reason.BAD_PATH, "refused");
    assertThat(e.code()).isEqualTo("BAD_PATH");
    assertThat(e.reason()).isSameAs(Reason.BAD_PATH);
    assertThat(new SnapshotException(SnapshotException.Reason.TAMPERED, "x").code())
        .isEqualTo("TAMPERED");
  }

  @Test
  void theWireSpellingsAreFixed() {
    // These names cross the wire (agent.py's error replies) and the CLI's --json output: renaming
    // a constant is a protocol change, so it must fail here first.
    assertThat(Arrays.stream(Reason.values()).map(Reason::code))
        .containsExactly(
            "BAD_PATH",
            "NOT_FOUND",
            "NOT_A_FILE",
            "NOT_A_DIRECTORY",
            "IS_A_DIRECTORY",
            "EXISTS",
            "NOT_EMPTY",
            "TOO_LARGE",
            "TOO_MANY",
            "BAD_GLOB",
            "SYMLINK",
            "SECRET_IN_NAME",
            "NO_SPACE",
            "READ_ONLY",
            "BAD_ENTRY",
            "BAD_ARCHIVE",
            "ARCHIVE_REFUSED",
            "IO",
            "HOST_IO",
            "AGENT");
    assertThat(Arrays.stream(SnapshotException.Reason.values()).map(SnapshotException.Reason::code))
        .containsExactly(
            "BAD_NAME",
            "EXISTS",
            "NOT_FOUND",
            "TAMPERED",
            "CORRUPT",
            "IMAGE_CHANGED",
            "NEEDS_CONFIG",
            "DISK_FULL",
            "SECRET",
            "IO");
  }

  @Test
  void aHostSideFailureIsTheOperatorsToFixAndABadPathTheCallers() {
    assertThat(Reason.HOST_IO.actor()).isEqualTo(FailureReason.Actor.OPERATOR);
    assertThat(Reason.BAD_PATH.actor()).isEqualTo(FailureReason.Actor.CALLER);
    assertThat(SnapshotException.Reason.TAMPERED.actor()).isEqualTo(FailureReason.Actor.OPERATOR);
  }
}
