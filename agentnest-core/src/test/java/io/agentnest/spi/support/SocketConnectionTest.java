package io.agentnest.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.SelectableAgentStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SocketConnectionTest {
  @TempDir Path dir;

  @Test
  void bytesPassBothWaysAsTheyAreAfterWhatTheHandshakeAlreadyRead() throws Exception {
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(dir.resolve("s.sock")));
      SocketChannel agentEnd =
          SocketChannel.open(UnixDomainSocketAddress.of(dir.resolve("s.sock")));
      SocketConnection host =
          new SocketConnection(
              "c1", server.accept(), "\u00a9N".getBytes(StandardCharsets.ISO_8859_1), () -> "");
      try {
        host.toAgent().write("to agent".getBytes(StandardCharsets.US_ASCII));
        host.toAgent().flush();
        ByteBuffer got = ByteBuffer.allocate(8);
        while (got.hasRemaining() && agentEnd.read(got) >= 0) {
          // blocking: eight bytes were written
        }
        assertThat(new String(got.array(), StandardCharsets.US_ASCII)).isEqualTo("to agent");

        agentEnd.write(ByteBuffer.wrap(" frame".getBytes(StandardCharsets.ISO_8859_1)));
        SelectableAgentStream s = host.selectableStream().orElseThrow();
        ByteArrayOutputStream seen = new ByteArrayOutputStream();
        ByteBuffer scratch = ByteBuffer.allocate(64);
        for (int i = 0; i < 1000 && seen.size() < 8; i++) {
          if (s.read(scratch, b -> seen.write(b.array(), b.position(), b.remaining())) == 0) {
            Thread.sleep(1);
          }
        }
        assertThat(seen.toString(StandardCharsets.ISO_8859_1)).isEqualTo("\u00a9N frame");
      } finally {
        host.close();
        agentEnd.close();
      }
    }
  }

  @Test
  void aStreamReaderGetsTheHandshakesLeftoverFirst() throws Exception {
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(dir.resolve("s.sock")));
      try (SocketChannel agentEnd =
          SocketChannel.open(UnixDomainSocketAddress.of(dir.resolve("s.sock")))) {
        SocketConnection host =
            new SocketConnection(
                "c1", server.accept(), "ab".getBytes(StandardCharsets.US_ASCII), () -> "");
        agentEnd.write(ByteBuffer.wrap("cd".getBytes(StandardCharsets.US_ASCII)));
        agentEnd.shutdownOutput();
        InputStream in = host.fromAgent();
        assertThat(new String(in.readAllBytes(), StandardCharsets.US_ASCII)).isEqualTo("abcd");
        host.close();
      }
    }
  }

  @Test
  void diagnosticsSayWhatTheBackendKnowsAndNothingWhenItCannotBeAsked() throws Exception {
    try (SocketChannel a = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      assertThat(
              new SocketConnection("c1", a, new byte[0], () -> "its container exited with status 1")
                  .diagnostics())
          .isEqualTo("its container exited with status 1");
      assertThat(
              new SocketConnection(
                      "c1",
                      a,
                      new byte[0],
                      () -> {
                        throw new IllegalStateException("engine gone");
                      })
                  .diagnostics())
          .isEmpty();
    }
  }
}
