package io.agentnest.internal.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.ForgedAgent;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A sandbox's expiry as the agent, the host state (under the test's own {@code AGENTNEST_HOME}) and
 * the reaper see it. The agent is the test ({@link ForgedAgent}), answering every request.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SandboxExpiryTest {
  private final String id = "expiry-test-" + UUID.randomUUID();
  private final Instant later =
      Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.SECONDS);
  private final CountDownLatch expired = new CountDownLatch(1);
  private ForgedAgent agent;
  private AgentChannel channel;

  @BeforeEach
  void open() throws Exception {
    agent = new ForgedAgent();
    agent.answerWith(
        f ->
            List.of(
                new Frame(
                    Json.object()
                        .put(Ops.EV, Ops.EV_RESULT)
                        .put("id", f.header().path("id").asLong()),
                    new byte[0])));
    channel = new AgentChannel(agent);
  }

  @AfterEach
  void close() {
    ExpiryReaper.cancel(id);
    HostState.delete(id);
    channel.close();
    agent.close();
  }

  private SandboxExpiry expiry(Instant at) {
    return new SandboxExpiry(id, "docker", channel, at, expired::countDown);
  }

  private ObjectNode setTtl() throws InterruptedException {
    ObjectNode h = agent.nextRequest().header();
    assertThat(h.path(Ops.OP).asText()).isEqualTo(Ops.OP_SET_TTL);
    return h;
  }

  @Test
  void armingTellsTheAgentWritesTheHostStateAndSchedulesTheReaper() throws Exception {
    SandboxExpiry e = expiry(later);

    e.arm(false);

    ObjectNode h = setTtl();
    assertThat(h.path("expires_at").asLong()).isEqualTo(later.getEpochSecond());
    assertThat(h.path("extend_only").asBoolean()).isFalse();
    assertThat(HostState.read(id))
        .contains(new HostState.Entry(id, "docker", SecurityPolicy.ownerId(), later));
    assertThat(ExpiryReaper.isScheduled(id)).isTrue();
  }

  @Test
  void anOwnedSandboxIsEndedByTheReaperOnceItsExpiryHasPassed() throws Exception {
    SandboxExpiry e = expiry(Instant.now().minusSeconds(1));

    e.arm(false);

    assertThat(expired.await(10, TimeUnit.SECONDS)).as("the reaper ran the expiry").isTrue();
  }

  @Test
  void aHandleThatDoesNotOwnTheSandboxNeverEndsItAndOnlyExtendsTheAgentsExpiry() throws Exception {
    SandboxExpiry e = expiry(later);
    e.arm(false);
    setTtl();
    assertThat(ExpiryReaper.isScheduled(id)).isTrue();

    e.setOwner("another-process");
    e.arm(true);

    assertThat(setTtl().path("extend_only").asBoolean()).isTrue();
    assertThat(ExpiryReaper.isScheduled(id)).isFalse();
    assertThat(HostState.read(id).orElseThrow().owner()).isEqualTo("another-process");
    assertThat(expired.getCount()).isEqualTo(1);
  }

  @Test
  void extendMovesTheExpiryLaterEverywhere() throws Exception {
    SandboxExpiry e = expiry(later);

    e.extend(Duration.ofMinutes(30));

    Instant moved = later.plus(Duration.ofMinutes(30));
    assertThat(e.expiresAt()).isEqualTo(moved);
    assertThat(setTtl().path("expires_at").asLong()).isEqualTo(moved.getEpochSecond());
    assertThat(HostState.read(id).orElseThrow().expiresAt()).isEqualTo(moved);
  }

  @Test
  void restartCountsTheTtlFromNow() throws Exception {
    SandboxExpiry e = expiry(Instant.now().minus(Duration.ofDays(1)));
    Instant before = Instant.now();

    e.restart(Duration.ofHours(2));

    assertThat(e.expiresAt()).isAfterOrEqualTo(before.plus(Duration.ofHours(2)));
    assertThat(setTtl().path("expires_at").asLong()).isEqualTo(e.expiresAt().getEpochSecond());
    assertThat(ExpiryReaper.isScheduled(id)).isTrue();
  }

  @Test
  void detachLeavesTheSandboxToItsAgentAndPrune() throws Exception {
    SandboxExpiry e = expiry(later);
    e.arm(false);
    setTtl();

    e.detach();

    assertThat(ExpiryReaper.isScheduled(id)).isFalse();
    assertThat(HostState.read(id).orElseThrow().owner()).isEqualTo(HostState.DETACHED);
  }

  @Test
  void cancelStopsTheReaperAndNothingElse() throws Exception {
    SandboxExpiry e = expiry(later);
    e.arm(false);
    setTtl();

    e.cancel();

    assertThat(ExpiryReaper.isScheduled(id)).isFalse();
    assertThat(HostState.read(id)).isPresent();
  }
}
