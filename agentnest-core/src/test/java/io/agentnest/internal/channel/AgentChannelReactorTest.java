package io.agentnest.internal.channel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Every {@link AgentChannelTest} case again, with the connection read by the shared {@link
 * ChannelReactor} instead of a thread per channel; and what only the reactor path has: no thread
 * per idle channel, frame order across the dispatch pool, backpressure.
 */
class AgentChannelReactorTest extends AgentChannelTest {

  @Override
  boolean selectable() {
    return true;
  }

  private static long channelThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("agentnest-channel-"))
        .count();
  }

  @Test
  void idleChannelsHoldNoThreadOfTheirOwn() throws Exception {
    long before = channelThreads();
    List<FakeSandbox> sandboxes = new ArrayList<>();
    List<AgentChannel> channels = new ArrayList<>();
    try {
      for (int i = 0; i < 50; i++) {
        FakeSandbox s = new FakeSandbox(true);
        sandboxes.add(s);
        channels.add(new AgentChannel(s));
      }
      assertThat(channelThreads()).isEqualTo(before);
      // And every one of them still answers.
      for (int i = 0; i < channels.size(); i++) {
        CompletableFuture<Frame> done =
            channels.get(i).call(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0], f -> {});
        long id = sandboxes.get(i).nextRequest().id();
        sandboxes.get(i).reply(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", id), new byte[0]);
        assertThat(channels.get(i).await(done, Duration.ofSeconds(5), "ping").ev())
            .isEqualTo(Ops.EV_RESULT);
      }
    } finally {
      channels.forEach(AgentChannel::close);
    }
  }

  /**
   * Issue 42 (4): an OutOfMemoryError once landed in the one reactor thread while it handled one
   * sandbox's bytes, and every sandbox of the process stalled. Now that sandbox's channel closes
   * with the reason and the others keep answering, for OutOfMemoryError and StackOverflowError
   * alike.
   */
  @Test
  void anErrorInOneChannelsReadingClosesOnlyThatChannel() throws Exception {
    FakeSandbox other = new FakeSandbox(true);
    AgentChannel otherChannel = new AgentChannel(other);
    try {
      assertAnswers(otherChannel, other);
      for (Error error :
          List.of(
              new OutOfMemoryError("Java heap space (simulated)"),
              new StackOverflowError("simulated"))) {
        FakeSandbox victim = new FakeSandbox(true);
        AgentChannel victimChannel = new AgentChannel(victim);
        try {
          CompletableFuture<Frame> pending =
              victimChannel.call(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0], f -> {});
          long id = victim.nextRequest().id();
          victim.readError = error;
          victim.reply(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", id), new byte[0]);
          assertThatThrownBy(() -> victimChannel.await(pending, Duration.ofSeconds(5), "ping"))
              .as("the sandbox whose handling failed is told why")
              .hasMessageContaining(error.getClass().getSimpleName());
          assertThat(victimChannel.isAlive()).isFalse();
          // The reactor is still there for everyone else, several times over.
          for (int i = 0; i < 3; i++) {
            assertAnswers(otherChannel, other);
          }
          FakeSandbox later = new FakeSandbox(true);
          AgentChannel laterChannel = new AgentChannel(later);
          try {
            assertAnswers(laterChannel, later);
          } finally {
            laterChannel.close();
          }
        } finally {
          victimChannel.close();
        }
      }
    } finally {
      otherChannel.close();
    }
  }

  private static void assertAnswers(AgentChannel ch, FakeSandbox s) throws IOException {
    CompletableFuture<Frame> done =
        ch.call(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0], f -> {});
    long id = s.nextRequest().id();
    s.reply(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", id), new byte[0]);
    assertThat(ch.await(done, Duration.ofSeconds(5), "ping").ev()).isEqualTo(Ops.EV_RESULT);
  }

  @Test
  void framesOfACallReachItsListenerInOrder() throws Exception {
    AgentChannel ch = channel;
    List<Long> seen = new CopyOnWriteArrayList<>();
    CompletableFuture<Frame> done =
        ch.call(
            Json.object().put(Ops.OP, Ops.OP_EXEC),
            new byte[0],
            f -> seen.add(f.header().path("n").asLong()));
    long id = sandbox.nextRequest().id();
    for (int n = 0; n < 2000; n++) {
      sandbox.reply(Json.object().put(Ops.EV, Ops.EV_OUT).put("id", id).put("n", n), new byte[10]);
    }
    sandbox.reply(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", id), new byte[0]);
    ch.await(done, Duration.ofSeconds(10), "exec");
    assertThat(seen).hasSize(2000);
    for (int n = 0; n < 2000; n++) {
      assertThat(seen.get(n)).isEqualTo(n);
    }
  }

  @Test
  void aSlowListenerPausesReadingInsteadOfQueueingWithoutBound() throws Exception {
    AgentChannel ch = channel;
    CountDownLatch release = new CountDownLatch(1);
    List<Long> seen = new CopyOnWriteArrayList<>();
    CompletableFuture<Frame> done =
        ch.call(
            Json.object().put(Ops.OP, Ops.OP_EXEC),
            new byte[0],
            f -> {
              try {
                release.await(10, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              seen.add(f.header().path("n").asLong());
            });
    long id = sandbox.nextRequest().id();
    int frames = 256; // 16 MiB of output, four times the pause mark
    AtomicLong written = new AtomicLong();
    Thread agent =
        new Thread(
            () -> {
              try {
                for (int n = 0; n < frames; n++) {
                  sandbox.reply(
                      Json.object().put(Ops.EV, Ops.EV_OUT).put("id", id).put("n", n),
                      new byte[64 * 1024]);
                  written.addAndGet(64 * 1024);
                }
                sandbox.reply(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", id), new byte[0]);
              } catch (IOException e) {
                // the test fails on the missing frames below
              }
            });
    agent.setDaemon(true);
    agent.start();
    // Wait (bounded) until the agent's writes stall: the host stopped reading.
    long last = -1;
    for (int i = 0; i < 100 && written.get() != last; i++) {
      last = written.get();
      Thread.sleep(100);
    }
    assertThat(written.get())
        .as("bytes the agent could write while the listener was stuck")
        .isLessThan(frames * 64L * 1024);
    assertThat(agent.isAlive()).isTrue();

    release.countDown();
    ch.await(done, Duration.ofSeconds(10), "exec");
    agent.join(5000);
    assertThat(seen).hasSize(frames);
    for (int n = 0; n < frames; n++) {
      assertThat(seen.get(n)).isEqualTo(n);
    }
  }
}
