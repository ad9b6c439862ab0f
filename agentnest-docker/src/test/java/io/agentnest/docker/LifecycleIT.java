package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** TTL expiry, extend(), the agent's own expiry when its owner is gone, and prune. */
@ExtendWith(DockerEngineRequired.class)
class LifecycleIT {
  @TempDir static Path home;
  static TestHome isolated;

  @BeforeAll
  static void isolateHostState() {
    isolated = TestHome.use(home);
  }

  @AfterAll
  static void restore() {
    isolated.close();
  }

  static boolean listed(String id) {
    return Sandbox.list().stream().map(SandboxInfo::id).anyMatch(id::equals);
  }

  @Test
  void sandboxIsDestroyedWhenItsTtlRunsOut() {
    Sandbox sb = Sandbox.create(SandboxConfig.builder().ttl(Duration.ofSeconds(2)).build());
    assertThat(sb.expiresAt()).isBefore(Instant.now().plusSeconds(3));
    assertThat(HostState.read(sb.id())).isPresent();
    await().atMost(Duration.ofSeconds(20)).until(() -> !listed(sb.id()));
    assertThat(sb.isAlive()).isFalse();
    assertThatThrownBy(() -> sb.exec("true"))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("expired");
    assertThat(HostState.read(sb.id())).isEmpty();
  }

  @Test
  void extendKeepsItAlivePastTheOriginalTtl() throws Exception {
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().ttl(Duration.ofSeconds(3)).build())) {
      Instant first = sb.expiresAt();
      sb.extend(Duration.ofSeconds(30));
      assertThat(sb.expiresAt()).isEqualTo(first.plusSeconds(30));
      assertThat(HostState.read(sb.id()).orElseThrow().expiresAt().getEpochSecond())
          .isEqualTo(sb.expiresAt().getEpochSecond());
      Thread.sleep(5000);
      assertThat(sb.runCode("'still here'").result()).isEqualTo("'still here'");
    }
  }

  @Test
  void killedOwnerLeavesNothingAfterPrune() throws Exception {
    Process owner =
        ChildJvm.start(
            ChildJvm.SandboxOwner.class, Map.of("AGENTNEST_HOME", home.toString()), "2", "600");
    List<String> ids;
    try {
      List<String> lines = ChildJvm.readUntil(owner, "ready", 10);
      assertThat(lines).last().isEqualTo("ready");
      ids = lines.stream().filter(l -> l.startsWith("sandbox ")).map(l -> l.substring(8)).toList();
      assertThat(ids).hasSize(2);
      ids.forEach(id -> assertThat(listed(id)).isTrue());
    } finally {
      owner.destroyForcibly(); // SIGKILL: no shutdown hooks, no cleanup
      assertThat(owner.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }
    PruneReport dry = Sandbox.prune("docker", new PruneOptions(false, null, true));
    assertThat(dry.items()).extracting(PruneReport.Item::id).containsAll(ids);
    ids.forEach(id -> assertThat(listed(id)).as("dry run removes nothing").isTrue());

    PruneReport report = Sandbox.prune("docker", new PruneOptions(false, null, false));
    assertThat(report.items())
        .filteredOn(i -> ids.contains(i.id()))
        .hasSize(2)
        .allSatisfy(
            i -> {
              assertThat(i.removed()).isTrue();
              assertThat(i.reason()).contains("owner process");
            });
    List<ManagedResource> left = DockerEngine.connect().resources();
    assertThat(left).extracting(ManagedResource::id).doesNotContainAnyElementsOf(ids);
    ids.forEach(id -> assertThat(HostState.read(id)).isEmpty());
  }

  @Test
  void agentStopsItsSandboxAtExpiryWhenNobodyElseCan() throws Exception {
    Process owner =
        ChildJvm.start(
            ChildJvm.SandboxOwner.class, Map.of("AGENTNEST_HOME", home.toString()), "1", "4");
    String id;
    try {
      List<String> lines = ChildJvm.readUntil(owner, "ready", 10);
      id = lines.get(0).substring(8);
    } finally {
      owner.destroyForcibly();
      owner.waitFor(30, TimeUnit.SECONDS);
    }
    DockerEngine engine = DockerEngine.connect();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                !Boolean.TRUE.equals(
                    engine.client().inspectContainerCmd(id).exec().getState().getRunning()));
    PruneReport report = Sandbox.prune("docker", new PruneOptions(false, null, false));
    assertThat(report.items()).extracting(PruneReport.Item::id).contains(id);
    assertThat(listed(id)).isFalse();
  }

  @Test
  void pruneLeavesLiveSandboxesOfLiveOwnersAlone() {
    try (Sandbox sb = Sandbox.create()) {
      PruneReport report = Sandbox.prune("docker", new PruneOptions(false, null, false));
      assertThat(report.items()).extracting(PruneReport.Item::id).doesNotContain(sb.id());
      assertThat(sb.runCode("1").result()).isEqualTo("1");
      PruneReport older =
          Sandbox.prune("docker", new PruneOptions(true, Duration.ofHours(1), true));
      assertThat(older.items()).extracting(PruneReport.Item::id).doesNotContain(sb.id());
    }
  }

  @Test
  void pruneRemovesBulkDirectoriesWhoseSandboxIsGoneAndKeepsLiveAndFreshOnes() throws Exception {
    Path root = Path.of("/run/agentnest/bulk");
    Files.createDirectories(root);
    Path orphan = root.resolve("0".repeat(24) + "deadbeef");
    Path fresh = root.resolve("0".repeat(24) + "0000fee1");
    Files.createDirectories(orphan);
    Files.createDirectories(fresh);
    Files.setLastModifiedTime(orphan, FileTime.from(Instant.now().minus(Duration.ofHours(2))));
    try (Sandbox sb = Sandbox.create()) {
      String live =
          DockerEngine.connect()
              .client()
              .inspectContainerCmd(sb.id())
              .exec()
              .getConfig()
              .getLabels()
              .get(Labels.BULK_DIR);
      PruneReport report = Sandbox.prune("docker", new PruneOptions(false, null, false));
      assertThat(report.items())
          .filteredOn(i -> i.kind().equals("bulk-dir"))
          .extracting(PruneReport.Item::id)
          .contains(orphan.toString())
          .doesNotContain(fresh.toString(), live);
      assertThat(orphan).doesNotExist();
      assertThat(fresh).exists();
      assertThat(Path.of(live)).exists();
    } finally {
      Files.deleteIfExists(fresh);
    }
  }

  @Test
  void connectFromAnotherHandleKeepsTheExtendedExpiry() {
    Sandbox sb = Sandbox.create(SandboxConfig.builder().ttl(Duration.ofMinutes(1)).build());
    try {
      sb.extend(Duration.ofMinutes(10));
      Instant extended = sb.expiresAt();
      sb.detach();
      try (Sandbox again = Sandbox.connect(sb.id())) {
        assertThat(again.expiresAt().getEpochSecond()).isEqualTo(extended.getEpochSecond());
      }
    } finally {
      sb.destroy();
    }
  }
}
