package io.agentnest.microvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.Secret;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fork and snapshots of real QEMU guests by their memory (QEMU's migration stream): what only a
 * memory copy can carry, a running process, survives; copies diverge; the refusals hold. One parent
 * serves the class: every guest boot costs seconds under TCG.
 */
@ExtendWith(MicrovmRequired.class)
class MicrovmCheckpointIT {
  private static final RuntimeBackend BACKEND = Backends.get("microvm");
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A background process that counts into a file, bounded (at most 20 minutes). */
  private static final String TICKER =
      "import subprocess, sys\n"
          + "ticker = subprocess.Popen([sys.executable, '-c', 'import time\\n"
          + "for i in range(6000):\\n"
          + "    open(\"/tmp/tick\", \"w\").write(str(i))\\n"
          + "    time.sleep(0.2)\\n'])\n"
          + "state = {'n': 41}";

  private static Sandbox parent;

  private static SandboxConfig config() {
    return SandboxConfig.builder().runtime("microvm").label("agentnest-test", "checkpoint").build();
  }

  @BeforeAll
  static void startParent() {
    parent = Sandbox.create(config());
    parent.runCode(TICKER);
    parent.files().write("shared.txt", "parent");
  }

  @AfterAll
  static void destroyParent() {
    if (parent != null) {
      parent.destroy();
    }
  }

  /** The ticker is alive in {@code sb} and still counting (bounded wait). */
  private static void tickerRuns(Sandbox sb) throws InterruptedException {
    assertThat(sb.runCode("ticker.poll() is None").result()).isEqualTo("True");
    long first = Long.parseLong(sb.exec("cat /tmp/tick").stdout().strip());
    long now = first;
    for (int i = 0; i < 50 && now == first; i++) {
      Thread.sleep(200);
      now = Long.parseLong(sb.exec("cat /tmp/tick").stdout().strip());
    }
    assertThat(now).isGreaterThan(first);
  }

  @Test
  void aForkCopiesTheSessionAndARunningProcessByMemoryAndTheCopiesDiverge() throws Exception {
    List<Sandbox> copies = parent.fork(2);
    try {
      assertThat(copies)
          .extracting(Sandbox::id)
          .doesNotHaveDuplicates()
          .doesNotContain(parent.id());
      for (Sandbox c : copies) {
        ForkReport r = c.forkReport().orElseThrow();
        assertThat(r.mode()).isEqualTo(ForkReport.Mode.CHECKPOINT);
        assertThat(r.parentId()).isEqualTo(parent.id());
        assertThat(c.runCode("state['n']").result()).isEqualTo("41");
        assertThat(c.files().readString("shared.txt")).isEqualTo("parent");
        tickerRuns(c);
      }
      // Each copy has the host's time and a random generator of its own (vminit's Control).
      String random0 = copies.get(0).runCode("import os; os.urandom(16).hex()").result();
      String random1 = copies.get(1).runCode("import os; os.urandom(16).hex()").result();
      assertThat(random0).isNotEqualTo(random1);
      copies.forEach(MicrovmCheckpointIT::clockIsTheHosts);
      clockIsTheHosts(parent);
      copies.get(0).runCode("state['n'] = 0");
      copies.get(1).runCode("state['n'] = 1");
      copies.get(0).files().write("shared.txt", "copy 0");
      assertThat(copies.get(0).runCode("state['n']").result()).isEqualTo("0");
      assertThat(copies.get(1).runCode("state['n']").result()).isEqualTo("1");
      assertThat(copies.get(1).files().readString("shared.txt")).isEqualTo("parent");
      assertThat(parent.runCode("state['n']").result()).isEqualTo("41");
      assertThat(parent.files().readString("shared.txt")).isEqualTo("parent");
      tickerRuns(parent);
    } finally {
      copies.forEach(Sandbox::destroy);
    }
    assertThat(BACKEND.list()).extracting(SandboxInfo::id).doesNotContainAnyElementsOf(ids(copies));
  }

  /** The guest's clock is the host's, not behind by the time it was paused (within a second). */
  private static void clockIsTheHosts(Sandbox sb) {
    long before = System.currentTimeMillis();
    double guest = Double.parseDouble(sb.runCode("import time; time.time()").result());
    long after = System.currentTimeMillis();
    assertThat(guest * 1000).isBetween(before - 1000.0, after + 1000.0);
  }

  private static List<String> ids(List<Sandbox> sbs) {
    return sbs.stream().map(Sandbox::id).toList();
  }

  @Test
  void aSnapshotWithMemoryRestoresIntoANewSandboxWithItsProcesses() throws Exception {
    String name = "vmsnap-" + UUID.randomUUID().toString().substring(0, 8);
    parent.runCode("saved = 'kept'");
    SnapshotInfo info = parent.snapshot(name);
    try {
      assertThat(info.memory()).isTrue();
      assertThat(info.memoryNote()).startsWith("process memory captured");
      parent.runCode("saved = 'changed after'");
      Instant asked = Instant.now();
      try (Sandbox restored =
          Sandbox.restore(name, config().toBuilder().ttl(Duration.ofMinutes(7)).build())) {
        assertThat(restored.id()).isNotEqualTo(parent.id());
        // Its expiry is the restore's own, kept by the host (the guest's clock plays no part).
        assertThat(restored.expiresAt())
            .isBetween(
                asked.plus(Duration.ofMinutes(7)).minusSeconds(2),
                Instant.now().plus(Duration.ofMinutes(7)));
        assertThat(restored.runCode("saved").result()).isEqualTo("'kept'");
        // Only a memory restore brings a running process back.
        tickerRuns(restored);
        clockIsTheHosts(restored);
        assertThat(restored.files().readString("shared.txt")).isEqualTo("parent");
      }
      assertThat(parent.runCode("saved").result()).isEqualTo("'changed after'");
    } finally {
      Sandbox.removeSnapshot(name);
    }
  }

  @Test
  void aCheckpointRestoresOnlyIntoTheGuestImageItWasTakenFrom(@TempDir Path dir) throws Exception {
    Path cp = dir.resolve("cp");
    assertThat(BACKEND.checkpointTo(parent.id(), cp, () -> {}, b -> {})).isTrue();
    assertThat(cp.resolve("vmstate")).isRegularFile();
    assertThat(parent.runCode("state['n'] + 1").result()).isEqualTo("42");
    ObjectNode meta = (ObjectNode) JSON.readTree(cp.resolve("checkpoint.json").toFile());
    meta.put("imageId", "sha256:" + "0".repeat(64));
    Files.write(cp.resolve("checkpoint.json"), JSON.writeValueAsBytes(meta));
    int before = BACKEND.list().size();
    assertThatThrownBy(() -> BACKEND.createFromCheckpoint(SecurityPolicy.specFor(config()), cp))
        .isInstanceOf(SnapshotException.class)
        .hasMessageContaining("restores only into the kernel and root disk it ran on")
        .satisfies(
            e ->
                assertThat(((SnapshotException) e).reason())
                    .isEqualTo(SnapshotException.Reason.IMAGE_CHANGED));
    assertThat(BACKEND.list()).hasSize(before);
  }

  @Test
  void aSandboxWithSecretVariablesIsForkedByStateTransferAndSaysWhy() {
    try (Sandbox withSecret =
        Sandbox.create(
            config().toBuilder().secretEnv("TOKEN", Secret.of("s3cr3t-v4lue")).build())) {
      withSecret.runCode("kept = 7");
      try (Sandbox copy = withSecret.fork()) {
        ForkReport r = copy.forkReport().orElseThrow();
        assertThat(r.mode()).isEqualTo(ForkReport.Mode.STATE_TRANSFER);
        assertThat(r.skipped())
            .anySatisfy(
                s ->
                    assertThat(s.reason())
                        .contains("secret variables", "migration file for a microVM guest"));
        assertThat(copy.runCode("kept").result()).isEqualTo("7");
      }
    }
  }
}
