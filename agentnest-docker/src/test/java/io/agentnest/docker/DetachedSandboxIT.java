package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecResult;
import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A detached sandbox outlives the clients that attach to it, also one killed with SIGKILL in the
 * middle of a command (issue 27). Three causes were found: the attaching client told the agent its
 * own, shorter idea of the expiry (the label's, not knowing an extension made from another home),
 * so the agent stopped the container early; it recorded itself as the sandbox's owner, so once it
 * was killed 'prune' removed the sandbox as orphaned; and a client attaching afterwards numbered
 * its calls like the killed one, so the command the killed client left running answered the new
 * client's calls.
 */
@ExtendWith(DockerEngineRequired.class)
class DetachedSandboxIT {
  /** The creator's home; the killed client runs with another one (another user, say). */
  @TempDir Path creatorHome;

  @TempDir Path clientHome;

  @BeforeEach
  void useCreatorHome() {
    System.setProperty("agentnest.home", creatorHome.toString());
  }

  @AfterEach
  void restoreHome() {
    System.clearProperty("agentnest.home");
  }

  static List<String> prunable(Path home, String id) {
    try (TestHome isolated = TestHome.use(home)) {
      return Sandbox.prune("docker", new PruneOptions(false, null, true)).items().stream()
          .filter(i -> i.id().equals(id))
          .map(PruneReport.Item::reason)
          .toList();
    }
  }

  @Test
  void aClientKilledMidExecLeavesTheSandboxRunningUntilItsTtlAndAttachable() throws Exception {
    Sandbox created = Sandbox.create(SandboxConfig.builder().ttl(Duration.ofSeconds(25)).build());
    String id = created.id();
    Instant labelled = created.expiresAt();
    created.extend(Duration.ofMinutes(2));
    created.detach();
    DockerEngine engine = DockerEngine.connect();
    try {
      Process client =
          ChildJvm.start(
              ChildJvm.MidExecClient.class,
              Map.of("AGENTNEST_HOME", clientHome.toString()),
              id,
              "for i in $(seq 1 600); do echo tick $i; sleep 0.1; done");
      try {
        List<String> lines = ChildJvm.readUntil(client, "out tick 3", 50);
        assertThat(lines).last().asString().startsWith("out tick 3");
      } finally {
        client.destroyForcibly(); // SIGKILL in the middle of the command
        assertThat(client.waitFor(30, TimeUnit.SECONDS)).isTrue();
      }

      assertThat(prunable(clientHome, id))
          .as("the killed client did not own the sandbox: its death orphans nothing")
          .isEmpty();
      assertThat(prunable(creatorHome, id))
          .as("the creator left it running on purpose (detach): only its TTL ends it")
          .isEmpty();

      // Attach again, from the client's home (which never heard of the extension), while the
      // killed client's command still streams in the sandbox.
      System.setProperty("agentnest.home", clientHome.toString());
      Sandbox again = Sandbox.connect(id);
      // Long enough for the orphaned command to print meanwhile: none of it may land here.
      ExecResult r = again.exec("sleep 1; echo alive");
      assertThat(r.stdout())
          .as("this call's own output, not the orphaned command's")
          .isEqualTo("alive\n");
      again.detach();

      // Past the expiry the killed client knew of (the label's), well before the extended one.
      Instant past = labelled.plusSeconds(5);
      for (int i = 0; i < 120 && Instant.now().isBefore(past); i++) {
        Thread.sleep(500);
      }
      assertThat(Instant.now()).isAfter(past);
      assertThat(engine.client().inspectContainerCmd(id).exec().getState().getRunning())
          .as("the agent kept the extended expiry")
          .isTrue();
      Sandbox later = Sandbox.connect(id);
      assertThat(later.exec("echo still here").stdout()).isEqualTo("still here\n");
      assertThat(engine.client().inspectContainerCmd(id).exec().getState().getRunning())
          .as("attaching from a home that knows only the first expiry does not end it")
          .isTrue();
      later.destroy();
    } finally {
      try {
        engine.client().removeContainerCmd(id).withForce(true).exec();
      } catch (RuntimeException alreadyGone) {
        // destroyed above
      }
    }
  }
}
