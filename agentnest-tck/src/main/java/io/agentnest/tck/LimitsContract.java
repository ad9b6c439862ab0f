package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxLimit;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Memory, process and disk limits stop a workload, name the limit, and leave the sandbox up. */
public interface LimitsContract extends BackendTarget {

  private static ExecOptions within(int seconds) {
    return ExecOptions.builder().timeout(Duration.ofSeconds(seconds)).build();
  }

  /**
   * Runs a workload that hits a limit: the result names it and the sandbox answers on, or, where
   * the backend says so, the whole sandbox ends and the call fails as closed.
   */
  private void hitsTheLimit(Sandbox sb, String workload, Set<Limit> expected) {
    ExecResult r;
    try {
      r = sb.exec(workload, within(60));
    } catch (SandboxClosedException ended) {
      assertThat(target().limitsMayEndTheSandbox())
          .as("the sandbox ended on a limit (%s); only allowed where the backend says so", ended)
          .isTrue();
      assertThat(sb.isAlive()).isFalse();
      return;
    }
    assertThat(r.limit()).isIn(expected.toArray());
    assertThat(r.ok()).isFalse();
    // The workload's processes are killed when the call ends; on a busy host their exits and
    // reaping can lag the result by a moment, and until then they still count against the limit.
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () -> assertThat(sb.exec("echo alive", within(20)).stdout()).isEqualTo("alive\n"));
  }

  @Test
  default void theMemoryLimitStopsAHog() {
    try (Sandbox sb = Sandbox.create(target().configure().memory("128m").build())) {
      hitsTheLimit(sb, "python3 -c \"b = b'x' * (1024 ** 3)\"", Set.of(Limit.MEMORY));
    }
  }

  @Test
  default void thePidsLimitStopsAForkBomb() {
    try (Sandbox sb = Sandbox.create(target().configure().pidsLimit(64).build())) {
      hitsTheLimit(
          sb, "bomb() { bomb | bomb & }; bomb; sleep 3", Set.of(Limit.PIDS, Limit.TIMEOUT));
    }
  }

  @Test
  default void theOpenFilesLimitStopsADescriptorHogAndCannotBeRaised() {
    // Each line: the soft and hard limit seen inside; whether raising it failed; the errno and the
    // count when opening stopped (EMFILE is 24).
    String hog =
        "python3 -c 'import resource, os\n"
            + "s, h = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            + "print(s, h)\n"
            + "try:\n"
            + "    resource.setrlimit(resource.RLIMIT_NOFILE, (h + 1, h + 1)); print(\"raised\")\n"
            + "except (ValueError, OSError):\n"
            + "    print(\"refused\")\n"
            + "fs = []\n"
            + "try:\n"
            + "    while len(fs) < 100000: fs.append(os.open(\"/dev/null\", os.O_RDONLY))\n"
            + "except OSError as e:\n"
            + "    print(e.errno, len(fs))'";
    try (Sandbox sb =
        Sandbox.create(target().configure().limit(SandboxLimit.OPEN_FILES, 128).build())) {
      ExecResult r = sb.exec(hog, within(60));
      assertThat(r.stdout().lines().toList()).as(r.stderr()).hasSize(3);
      List<String> lines = r.stdout().lines().toList();
      assertThat(lines.get(0)).isEqualTo("128 128");
      assertThat(lines.get(1)).isEqualTo("refused");
      String[] stopped = lines.get(2).split(" ");
      assertThat(stopped[0]).isEqualTo("24");
      assertThat(Integer.parseInt(stopped[1])).isBetween(100, 128);
      assertThat(sb.exec("echo alive", within(20)).stdout()).isEqualTo("alive\n");
    }
  }

  @Test
  default void scratchAndWorkspaceStopAtTheirSize() {
    try (Sandbox sb =
        Sandbox.create(
            target().configure().tmpSizeBytes(16L << 20).workspaceSizeBytes(32L << 20).build())) {
      ExecResult tmp = sb.exec("dd if=/dev/zero of=/tmp/fill bs=1M count=64", within(30));
      assertThat(tmp.exitCode()).isNotZero();
      assertThat(tmp.limit()).isEqualTo(Limit.DISK);
      ExecResult ws = sb.exec("dd if=/dev/zero of=/workspace/fill bs=1M count=64", within(30));
      assertThat(ws.limit()).isEqualTo(Limit.DISK);
      sb.exec("rm -f /tmp/fill /workspace/fill");
      assertThat(sb.files().write("after.txt", "ok").size()).isEqualTo(2);
    }
  }
}
