package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditLog;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.ForgedAgent;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.EngineFreeBackend;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hand-out of a pooled sandbox (SandboxLauncher.handOut) against a forged agent: what goes to
 * the agent in one flight, and what the user does not wait for.
 */
class PooledHandOutTest {
  @TempDir Path dir;

  /** Answers like the real agent, but says ready only once the hello and the expiry are in. */
  private static final class ReadyAfterHelloAndExpiry implements Function<Frame, List<Frame>> {
    final List<String> seen = new CopyOnWriteArrayList<>();
    private long helloId = -1;

    @Override
    public List<Frame> apply(Frame f) {
      String op = f.header().path(Ops.OP).asText();
      seen.add(op);
      if (op.equals(Ops.OP_HELLO)) {
        helloId = f.header().path("id").asLong();
      }
      if (!op.equals(Ops.OP_SET_TTL)) {
        return List.of();
      }
      return List.of(
          new Frame(Json.object().put("ev", Ops.EV_READY).put("version", 1), new byte[0]),
          result(helloId),
          result(f.header().path("id").asLong()));
    }
  }

  private static Frame result(long id) {
    return new Frame(Json.object().put("ev", Ops.EV_RESULT).put("id", id), new byte[0]);
  }

  /**
   * Hands the forged agent's sandbox out as the pool would, the agent answering as {@code side}.
   */
  private static DefaultSandbox handOut(
      FakeBackend backend,
      ForgedAgent agent,
      ReadyAfterHelloAndExpiry side,
      AuditLog log,
      Duration followUpDelay) {
    agent.answerWith(side);
    SandboxConfig config =
        SandboxConfig.builder().auditLog(log).startTimeout(Duration.ofSeconds(5)).build();
    return SandboxLauncher.handOut(
        backend, agent, new AgentChannel(agent), config, "p", true, followUpDelay);
  }

  /** Long enough that no test here reaches it: the follow-up waits for whoever claims it. */
  private static final Duration NEVER = Duration.ofHours(1);

  @Test
  void theHelloAndTheExpiryGoBehindTheSecretsWithoutWaitingForTheAgentsReady() throws Exception {
    ReadyAfterHelloAndExpiry agentSide = new ReadyAfterHelloAndExpiry();
    FakeBackend backend = new FakeBackend(new CountDownLatch(0));
    try (ForgedAgent agent = new ForgedAgent();
        AuditLog log = AuditLog.open(dir.resolve("audit"))) {
      DefaultSandbox sb = handOut(backend, agent, agentSide, log, NEVER);
      // Had the host waited for ready before its hello, the agent above would never have said it.
      assertThat(agentSide.seen).containsExactly(Ops.OP_INIT, Ops.OP_HELLO, Ops.OP_SET_TTL);
      sb.destroy();
    }
  }

  @Test
  void theLabelsAndCpuWeightFollowAMomentLaterAndADestroyWaitsForAWriteUnderWay() throws Exception {
    CountDownLatch labelsMayLand = new CountDownLatch(1);
    FakeBackend backend = new FakeBackend(labelsMayLand);
    ReadyAfterHelloAndExpiry agentSide = new ReadyAfterHelloAndExpiry();
    try (ForgedAgent agent = new ForgedAgent();
        AuditLog log = AuditLog.open(dir.resolve("audit"))) {
      DefaultSandbox sb = handOut(backend, agent, agentSide, log, Duration.ofMillis(50));
      // Handed out before anything was written; then the weight goes back up and the labels
      // follow, and the destroy below waits for the held-back write.
      assertThat(backend.events).doesNotContain("relabelled");
      assertThat(backend.relabelStarted.await(30, TimeUnit.SECONDS)).isTrue();
      assertThat(backend.events).containsExactly("cpu shares " + SandboxSpec.DEFAULT_CPU_SHARES);
      HostState.Entry state = HostState.read(sb.id()).orElseThrow();
      assertThat(state.expiresAt().getEpochSecond()).isEqualTo(sb.expiresAt().getEpochSecond());
      assertThat(state.owner()).isEqualTo(SecurityPolicy.ownerId());
      Thread destroyer = new Thread(sb::destroy, "destroyer");
      destroyer.start();
      labelsMayLand.countDown();
      destroyer.join(TimeUnit.SECONDS.toMillis(30));
      assertThat(destroyer.isAlive()).isFalse();
      assertThat(backend.events)
          .containsExactly(
              "cpu shares " + SandboxSpec.DEFAULT_CPU_SHARES, "relabelled", "destroyed");
      assertThat(backend.labels)
          .containsKeys(Labels.OWNER, Labels.POOL_ACQUIRED)
          .containsEntry(Labels.EXPIRES, Long.toString(sb.expiresAt().getEpochSecond()));
    }
  }

  @Test
  void aSandboxDestroyedBeforeItsFollowUpNeverHasItsLabelsWritten() throws Exception {
    FakeBackend backend = new FakeBackend(new CountDownLatch(0));
    ReadyAfterHelloAndExpiry agentSide = new ReadyAfterHelloAndExpiry();
    try (ForgedAgent agent = new ForgedAgent();
        AuditLog log = AuditLog.open(dir.resolve("audit"))) {
      HostState.delete(agent.id());
      DefaultSandbox sb = handOut(backend, agent, agentSide, log, NEVER);
      // Its TTL is armed in the agent and this process, the host state comes with the labels.
      assertThat(HostState.read(sb.id())).isEmpty();
      sb.destroy();
      assertThat(backend.events).containsExactly("destroyed");
    }
  }

  @Test
  void aDetachWritesTheLabelsAtOnceForTheProcessThatAttachesNext() throws Exception {
    FakeBackend backend = new FakeBackend(new CountDownLatch(0));
    ReadyAfterHelloAndExpiry agentSide = new ReadyAfterHelloAndExpiry();
    try (ForgedAgent agent = new ForgedAgent();
        AuditLog log = AuditLog.open(dir.resolve("audit"))) {
      DefaultSandbox sb = handOut(backend, agent, agentSide, log, NEVER);
      sb.detach();
      assertThat(backend.events)
          .containsExactly("cpu shares " + SandboxSpec.DEFAULT_CPU_SHARES, "relabelled");
      HostState.Entry state = HostState.read(sb.id()).orElseThrow();
      assertThat(state.owner()).isEqualTo(HostState.DETACHED);
      assertThat(state.expiresAt().getEpochSecond()).isEqualTo(sb.expiresAt().getEpochSecond());
      HostState.delete(sb.id());
      assertThat(backend.labels)
          .containsEntry(Labels.EXPIRES, Long.toString(sb.expiresAt().getEpochSecond()));
    }
  }

  @Test
  void aLabelWriteThatFailsDoesNotTakeTheSandboxFromItsUser() throws Exception {
    FakeBackend backend = new FakeBackend(new CountDownLatch(0));
    backend.failRelabel = true;
    ReadyAfterHelloAndExpiry agentSide = new ReadyAfterHelloAndExpiry();
    try (ForgedAgent agent = new ForgedAgent();
        AuditLog log = AuditLog.open(dir.resolve("audit"))) {
      DefaultSandbox sb = handOut(backend, agent, agentSide, log, Duration.ZERO);
      assertThat(backend.relabelStarted.await(30, TimeUnit.SECONDS)).isTrue();
      sb.destroy();
      assertThat(backend.events).endsWith("relabel failed", "destroyed");
      assertThat(sb.isAlive()).isFalse();
    }
  }

  /** A backend that only records relabel and destroy; relabel waits for {@code labelsMayLand}. */
  private static final class FakeBackend extends EngineFreeBackend {
    final List<String> events = new CopyOnWriteArrayList<>();
    final CountDownLatch labelsMayLand;
    final CountDownLatch relabelStarted = new CountDownLatch(1);
    volatile Map<String, String> labels = Map.of();
    volatile boolean failRelabel;

    FakeBackend(CountDownLatch labelsMayLand) {
      this.labelsMayLand = labelsMayLand;
    }

    @Override
    public String name() {
      return "fake";
    }

    @Override
    public void destroy(String id) {
      events.add("destroyed");
    }

    @Override
    public boolean setCpuShares(String id, int shares) {
      events.add("cpu shares " + shares);
      return true;
    }

    @Override
    public boolean relabel(String id, Map<String, String> labels) {
      relabelStarted.countDown();
      try {
        if (!labelsMayLand.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never let the labels land");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      if (failRelabel) {
        events.add("relabel failed");
        throw new IllegalStateException("the API server refused the patch");
      }
      this.labels = Map.copyOf(labels);
      events.add("relabelled");
      return true;
    }
  }
}
