package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.BackendUnavailableException;
import io.agentnest.SandboxNotFoundException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an attach that Docker refuses becomes, against a stand-in engine on a Unix socket. */
class UnixSocketAttachmentTest {
  @TempDir Path dir;

  /** A one-connection engine that reads the request head and answers {@code status}. */
  private Path engineAnswering(String status) throws Exception {
    Path sock = dir.resolve("docker.sock");
    ServerSocketChannel srv = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    srv.bind(UnixDomainSocketAddress.of(sock));
    CompletableFuture.runAsync(
        () -> {
          try (srv;
              SocketChannel c = srv.accept()) {
            ByteBuffer head = ByteBuffer.allocate(4096);
            c.read(head);
            c.write(
                ByteBuffer.wrap(
                    (status + "\r\nContent-Length: 0\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII)));
            TimeUnit.MILLISECONDS.sleep(200);
          } catch (Exception ignored) {
            // the test ends either way
          }
        });
    return sock;
  }

  @Test
  void aContainerRemovedBeforeTheAttachIsASandboxThatIsGoneNotAnEngineFault() throws Exception {
    Path sock = engineAnswering("HTTP/1.1 404 Not Found");
    assertThatThrownBy(() -> new UnixSocketAttachment(sock, "0123abcd"))
        .isInstanceOf(SandboxNotFoundException.class)
        .hasMessageContaining("sandbox 0123abcd is gone")
        .hasMessageContaining("agentnest ls");
  }

  @Test
  void anyOtherRefusalIsTheEnginesAndNamesItsStatus() throws Exception {
    Path sock = engineAnswering("HTTP/1.1 500 Internal Server Error");
    assertThatThrownBy(() -> new UnixSocketAttachment(sock, "0123abcd"))
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("500");
  }
}
