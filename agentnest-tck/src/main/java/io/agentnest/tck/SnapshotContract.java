package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Sandbox;
import io.agentnest.SnapshotInfo;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** A snapshot saved from a sandbox starts a new sandbox with the same files and sessions. */
public interface SnapshotContract extends BackendTarget {

  @Test
  default void aRestoredSnapshotHasTheFilesAndSessions(Sandbox sb) {
    String name = "tck-" + UUID.randomUUID().toString().substring(0, 8);
    sb.files().write("snap/data.csv", "a,b\n1,2\n");
    sb.runCode("total = 41\ndef bump(x):\n    return x + 1");
    SnapshotInfo info = sb.snapshot(name);
    try {
      assertThat(info.name()).isEqualTo(name);
      assertThat(info.sessions()).contains("default");
      assertThat(info.memory()).isEqualTo(target().snapshotsKeepMemory());
      try (Sandbox restored = Sandbox.restore(name, target().configure().build())) {
        assertThat(restored.id()).isNotEqualTo(sb.id());
        assertThat(restored.files().readString("snap/data.csv")).isEqualTo("a,b\n1,2\n");
        assertThat(restored.runCode("bump(total)").result()).isEqualTo("42");
      }
    } finally {
      Sandbox.removeSnapshot(name);
    }
    assertThat(Sandbox.snapshots()).extracting(SnapshotInfo::name).doesNotContain(name);
  }
}
