package io.agentnest.internal;

import io.agentnest.AgentNestException;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's {@code hello}: the first call on a new channel, which the agent must answer before
 * anything else is sent to it (a refusal means the agent is not the one this host speaks to).
 */
final class AgentHello {
  private static final Logger LOG = LoggerFactory.getLogger(AgentHello.class);

  private AgentHello() {}

  /** Sends {@code hello} and waits for its answer. */
  static void exchange(AgentChannel channel, String id) {
    await(channel, send(channel), id);
  }

  /**
   * Sends {@code hello} without waiting: the agent reads it after its first frame, so it can go
   * with that frame and its answer arrive with the agent's {@code ready} (one round trip less).
   */
  static CompletableFuture<Frame> send(AgentChannel channel) {
    return channel.call(Json.object().put(Ops.OP, Ops.OP_HELLO), new byte[0], f -> {});
  }

  static void await(AgentChannel channel, CompletableFuture<Frame> answer, String id) {
    Frame f = channel.await(answer, Duration.ofSeconds(10), Ops.OP_HELLO);
    if (!f.ev().equals(Ops.EV_RESULT)) {
      throw new AgentNestException("agent refused hello: " + f.header());
    }
    LOG.debug("sandbox {} agent {}", id, f.header());
  }
}
