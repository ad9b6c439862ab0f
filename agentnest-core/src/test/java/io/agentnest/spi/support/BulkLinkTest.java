package io.agentnest.spi.support;

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
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BulkLinkTest {
  @TempDir Path dir;

  private SocketChannel connect(String firstLine) throws IOException {
    SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX);
    c.connect(UnixDomainSocketAddress.of(dir.resolve(BulkLink.SOCKET)));
    if (!firstLine.isEmpty()) {
      c.write(ByteBuffer.wrap(firstLine.getBytes(StandardCharsets.US_ASCII)));
    }
    return c;
  }

  private static long in(Duration d) {
    return System.nanoTime() + d.toNanos();
  }

  @Test
  void onlyTheConnectionWithTheTokenTakesPartAndKeepsWhatFollowsIt() throws IOException {
    try (BulkLink link = BulkLink.open(dir)) {
      String token = link.expect();
      assertThat(token).matches("[0-9a-f]{32}");
      try (SocketChannel stranger = connect("0123456789abcdef0123456789abcdef\n");
          SocketChannel garbage = connect("x".repeat(200));
          SocketChannel right = connect(token + "\nPAYLOAD")) {
        SocketChannel got = link.accept(token, in(Duration.ofSeconds(10)), () -> false);
        assertThat(got).isNotNull();
        ByteBuffer b = ByteBuffer.allocate(7);
        while (b.hasRemaining() && got.read(b) >= 0) {
          // blocking: reads what the sandbox sent after its token
        }
        assertThat(new String(b.array(), StandardCharsets.US_ASCII)).isEqualTo("PAYLOAD");
        got.close();
        // Writable by the directory's group (the backend gives it the sandbox's gid), by no
        // other local user.
        Path sock = dir.resolve(BulkLink.SOCKET);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(sock)))
            .isEqualTo("rw-rw----");
        assertThat(Files.getAttribute(sock, "unix:gid"))
            .isEqualTo(Files.getAttribute(dir, "unix:gid"));
      }
    }
    assertThat(dir.resolve(BulkLink.SOCKET)).doesNotExist();
  }

  @Test
  void aStaleSocketFromAnEarlierProcessIsReplaced() throws IOException {
    Files.writeString(dir.resolve(BulkLink.SOCKET), "stale");
    try (BulkLink link = BulkLink.open(dir)) {
      String t = link.expect();
      try (SocketChannel c = connect(t + "\n")) {
        assertThat(link.accept(t, in(Duration.ofSeconds(10)), () -> false)).isNotNull();
      }
    }
  }

  @Test
  void transfersWaitingAtOnceEachGetTheirOwnConnection() throws Exception {
    try (BulkLink link = BulkLink.open(dir)) {
      String a = link.expect();
      String b = link.expect();
      try (SocketChannel cb = connect(b + "\nB");
          SocketChannel ca = connect(a + "\nA")) {
        CompletableFuture<SocketChannel> gotB =
            CompletableFuture.supplyAsync(
                () -> link.accept(b, in(Duration.ofSeconds(10)), () -> false));
        SocketChannel gotA = link.accept(a, in(Duration.ofSeconds(10)), () -> false);
        for (Object[] x : new Object[][] {{gotA, "A"}, {gotB.get(), "B"}}) {
          ByteBuffer one = ByteBuffer.allocate(1);
          ((SocketChannel) x[0]).read(one);
          assertThat(new String(one.array(), StandardCharsets.US_ASCII)).isEqualTo(x[1]);
        }
      }
    }
  }

  @Test
  void aSilentConnectionIsDroppedAndTheDeadlineIsKept() throws IOException {
    try (BulkLink link = BulkLink.open(dir, Duration.ofMillis(200));
        SocketChannel silent = connect("")) {
      String t = link.expect();
      assertThatThrownBy(() -> link.accept(t, in(Duration.ofMillis(600)), () -> false))
          .isInstanceOf(AgentNestException.class)
          .hasMessageContaining("did not connect to its link bulk.sock in time");
    }
  }

  @Test
  void probingWithManyWrongTokensStopsTheTransfer() throws IOException {
    try (BulkLink link = BulkLink.open(dir)) {
      List<SocketChannel> open = new ArrayList<>();
      try {
        for (int i = 0; i <= BulkLink.MAX_STRANGERS; i++) {
          open.add(connect("wrong" + i + "\n"));
        }
        String t = link.expect();
        assertThatThrownBy(() -> link.accept(t, in(Duration.ofSeconds(10)), () -> false))
            .isInstanceOf(AgentNestException.class)
            .hasMessageContaining("probing");
      } finally {
        for (SocketChannel c : open) {
          c.close();
        }
      }
    }
  }

  @Test
  void givesUpWhenTheAgentAnsweredWithoutConnecting() {
    try (BulkLink link = BulkLink.open(dir)) {
      assertThat(link.accept(link.expect(), in(Duration.ofSeconds(10)), () -> true)).isNull();
    }
  }

  @Test
  void aDirectoryThatCannotHoldTheSocketIsAClearError() {
    assertThatThrownBy(() -> BulkLink.open(dir.resolve("missing")))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("cannot listen on the bulk link")
        .hasMessageContaining("/run/agentnest");
  }
}
