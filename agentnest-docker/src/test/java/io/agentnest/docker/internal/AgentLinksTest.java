package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AgentNestException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentLinksTest {
  @TempDir Path dir;

  @Test
  void theLinkIsOnUnlessAttachIsAskedFor() {
    assertThat(AgentLinks.enabled(null)).isTrue();
    assertThat(AgentLinks.enabled("")).isTrue();
    assertThat(AgentLinks.enabled(" link ")).isTrue();
    assertThat(AgentLinks.enabled("attach")).isFalse();
  }

  @Test
  void anUnknownChannelNamesTheVariableAndTheChoices() {
    assertThatThrownBy(() -> AgentLinks.enabled("pipes"))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("AGENTNEST_DOCKER_CHANNEL='pipes' is not a channel")
        .hasMessageContaining("'link'")
        .hasMessageContaining("'attach'");
  }

  @Test
  void theAgentThatPresentsTheTokenGetsTheChannelAndTheSocketFileIsGoneAfterwards()
      throws Exception {
    SocketChannel ch;
    try (AgentLinks.Pending p = AgentLinks.listen(dir)) {
      assertThat(p.env()).isEqualTo("/run/agentnest/agent.sock:" + p.token());
      assertThat(p.token()).matches("[0-9a-f]{32}");
      CompletableFuture<SocketChannel> agent =
          CompletableFuture.supplyAsync(() -> connect(p.token() + "\n"));
      ch = AgentLinks.await(p, () -> false, () -> "unused");
      SocketChannel mine = agent.get(30, TimeUnit.SECONDS);
      mine.write(ByteBuffer.wrap("ready".getBytes(StandardCharsets.US_ASCII)));
      ByteBuffer got = ByteBuffer.allocate(5);
      while (got.hasRemaining() && ch.read(got) >= 0) {
        // blocking: five bytes were written
      }
      assertThat(new String(got.array(), StandardCharsets.US_ASCII)).isEqualTo("ready");
      mine.close();
    }
    ch.close();
    assertThat(Files.exists(dir.resolve(AgentLinks.SOCKET))).isFalse();
  }

  @Test
  void aConnectionWithoutTheTokenIsRefusedAndTheAgentsIsTaken() throws Exception {
    try (AgentLinks.Pending p = AgentLinks.listen(dir)) {
      SocketChannel stranger = connect("0123456789abcdef0123456789abcdef\n");
      CompletableFuture<SocketChannel> agent =
          CompletableFuture.supplyAsync(() -> connect(p.token() + "\n"));
      SocketChannel ch = AgentLinks.await(p, () -> false, () -> "unused");
      assertThat(stranger.read(ByteBuffer.allocate(1))).as("closed by the host").isEqualTo(-1);
      agent.get(30, TimeUnit.SECONDS).close();
      ch.close();
      stranger.close();
    }
  }

  @Test
  void aContainerThatEndsBeforeItsAgentConnectsFailsWithWhatTheEngineSaid() {
    AtomicInteger asked = new AtomicInteger();
    try (AgentLinks.Pending p = AgentLinks.listen(dir)) {
      assertThatThrownBy(
              () ->
                  AgentLinks.await(
                      p, () -> asked.incrementAndGet() > 0, () -> AgentLinks.exitReason(96, false)))
          .isInstanceOf(AgentNestException.class)
          .hasMessageContaining("ended before it connected")
          .hasMessageContaining("could not reach /run/agentnest/agent.sock (exit status 96")
          .hasMessageContaining("AGENTNEST_DOCKER_CHANNEL=attach");
    }
    assertThat(asked.get()).as("the engine is asked, throttled").isBetween(1, 3);
  }

  @Test
  void onlyRuntimesOnTheHostsKernelCanReachAHostSocket() {
    assertThat(DockerRuntimes.sharesHostKernel("runc")).isTrue();
    assertThat(DockerRuntimes.sharesHostKernel("io.containerd.runc.v2")).isTrue();
    assertThat(DockerRuntimes.sharesHostKernel("crun")).isTrue();
    assertThat(DockerRuntimes.sharesHostKernel("runsc")).isFalse();
    assertThat(DockerRuntimes.sharesHostKernel("kata-runtime")).isFalse();
    assertThat(DockerRuntimes.sharesHostKernel("my-runtime")).isFalse();
  }

  @Test
  void exitReasonsSayMemoryAndStatus() {
    assertThat(AgentLinks.exitReason(137, true)).contains("killed for memory");
    assertThat(AgentLinks.exitReason(1, false)).isEqualTo("its container exited with status 1");
  }

  private SocketChannel connect(String firstLine) {
    try {
      SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX);
      c.connect(UnixDomainSocketAddress.of(dir.resolve(AgentLinks.SOCKET)));
      c.write(ByteBuffer.wrap(firstLine.getBytes(StandardCharsets.US_ASCII)));
      return c;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
