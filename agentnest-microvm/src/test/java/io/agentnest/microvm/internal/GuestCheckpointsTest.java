package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GuestCheckpointsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private static GuestCheckpoints.Meta meta(String kernelArgs, long memoryMiB) {
    return new GuestCheckpoints.Meta(
        GuestCheckpoints.FORMAT,
        "agentnest/python:latest",
        "sha256:00",
        "tcg",
        memoryMiB,
        1,
        kernelArgs,
        true,
        256L << 20,
        1000);
  }

  private void write(GuestCheckpoints.Meta m) throws Exception {
    Files.write(dir.resolve(GuestCheckpoints.META), JSON.writeValueAsBytes(m));
  }

  @Test
  void whatACheckpointWroteReadsBack() throws Exception {
    GuestCheckpoints.Meta m = meta("console=ttyS0 quiet tsc_early_khz=2100000", 608);
    write(m);
    assertThat(GuestCheckpoints.readMeta(dir)).isEqualTo(m);
  }

  @Test
  void aDirectoryWithoutTheDescriptionIsNotAMicrovmCheckpoint() throws Exception {
    Files.writeString(dir.resolve("checkpoint.img"), "a gVisor image");
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("not a microVM checkpoint");
  }

  @Test
  void kernelArgumentsThatCouldCarryAnythingElseAreRefused() throws Exception {
    write(meta("console=ttyS0\" -device evil", 608));
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir))
        .hasMessageContaining("not one this version writes");
  }

  @Test
  void anImplausibleMachineIsRefused() throws Exception {
    write(meta("console=ttyS0", 1));
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir))
        .hasMessageContaining("not one this version writes");
  }

  @Test
  void anOversizedDescriptionIsRefusedUnread() throws Exception {
    Files.write(dir.resolve(GuestCheckpoints.META), new byte[100_000]);
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir)).hasMessageContaining("too long");
  }

  @Test
  void theResumedLineCarriesTheHostsTimeAndASeed() throws Exception {
    String line =
        GuestCheckpoints.resumedLine(Instant.ofEpochSecond(1_700_000_000L, 5), "ab".repeat(32));
    assertThat(JSON.readTree(line).path("op").asText()).isEqualTo("resumed");
    assertThat(JSON.readTree(line).path("time_ns").asLong()).isEqualTo(1_700_000_000_000_000_005L);
    assertThat(JSON.readTree(line).path("seed").asText()).hasSize(64);
    assertThat(line).doesNotContain("\n");
  }

  @Test
  void onlyAnImageWhoseInitAnswersGetsTheControlLine() throws Exception {
    Path image = Files.createDirectories(dir.resolve("image"));
    GuestImage g = new GuestImage("agentnest/python:latest", image);
    Files.writeString(image.resolve(GuestImage.META), "{\"image\": \"agentnest/python:latest\"}");
    assertThat(g.hasControlPort()).isFalse();
    Files.writeString(image.resolve(GuestImage.META), "{\"vminit\": 2}");
    assertThat(g.hasControlPort()).isTrue();
  }

  /**
   * A control port that takes a line without answering (QEMU drops what arrives while the init does
   * not read) is tried again with a fresh line, and the answer to that one counts.
   */
  @Test
  void anUnansweredControlLineIsSentAgainWithTheTimeOfItsSending() throws Exception {
    Path socket = dir.resolve("control.sock");
    List<String> received = new CopyOnWriteArrayList<>();
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(socket));
      Thread init =
          new Thread(
              () -> {
                for (int conn = 0; conn < 2; conn++) {
                  try (SocketChannel c = server.accept()) {
                    received.add(readLine(c));
                    if (conn == 1) {
                      c.write(ByteBuffer.wrap("resumed\n".getBytes(StandardCharsets.US_ASCII)));
                    }
                    // Held open, unanswered the first time, until the host hangs up.
                    c.read(ByteBuffer.allocate(1));
                  } catch (IOException e) {
                    received.add("error: " + e);
                  }
                }
              },
              "fake-init");
      init.setDaemon(true);
      init.start();
      assertThat(GuestCheckpoints.tellResumed(socket, Duration.ofMillis(300))).isTrue();
      init.join(10_000);
    }
    assertThat(received).hasSize(2);
    long first = JSON.readTree(received.get(0)).path("time_ns").asLong();
    long second = JSON.readTree(received.get(1)).path("time_ns").asLong();
    // Sent after the first try had waited its time, not the first line again.
    assertThat(second - first).isGreaterThanOrEqualTo(Duration.ofMillis(200).toNanos());
    assertThat(JSON.readTree(received.get(1)).path("seed").asText())
        .isNotEqualTo(JSON.readTree(received.get(0)).path("seed").asText());
  }

  @Test
  void aControlPortThatNeverAnswersIsGivenUpAfterTheLastTry() throws Exception {
    Path socket = dir.resolve("silent.sock");
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(socket));
      // Connections queue in the backlog and are never read: no answer on any try.
      assertThat(GuestCheckpoints.tellResumed(socket, Duration.ofMillis(100))).isFalse();
    }
  }

  private static String readLine(SocketChannel c) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    ByteBuffer one = ByteBuffer.allocate(1);
    for (int i = 0; i < 4096; i++) {
      one.clear();
      if (c.read(one) < 0) {
        break;
      }
      if (one.get(0) == '\n') {
        break;
      }
      line.write(one.get(0));
    }
    return line.toString(StandardCharsets.US_ASCII);
  }
}
