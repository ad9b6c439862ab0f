package io.agentnest.docker.internal;

import io.agentnest.BackendUnavailableException;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SelectableAgentStream;
import io.agentnest.spi.support.DuplexSocket;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The attach connection over the engine's Unix socket, upgraded by hand ({@code Upgrade: tcp}) so
 * that both directions are one raw, full-duplex socket: large writes go out as they are, with no
 * copy pump in between. docker-java's hijacking pump moves stdin in 1 KiB writes, which caps file
 * uploads and egress downloads far below what the socket does. Used for {@code unix://} hosts;
 * {@link DockerAttachment} covers the rest.
 *
 * <p>The host reads it either as a blocking stream or, once {@link #selectableStream()} was taken,
 * from the shared selector thread: the socket is then non-blocking, and a write that finds the
 * socket full waits for it on a selector of its own (the agent reads its stdin slower than we write
 * only under load, so that selector is rarely opened).
 */
final class UnixSocketAttachment implements BackendSandbox {
  private static final int MAX_HEAD = 16 * 1024;

  private final String id;
  private final SocketChannel ch;
  private final DuplexSocket io;
  // Made on first use: a connection read from the reactor never needs it (nor its 256 KiB).
  private @Nullable DockerStreamDemux stdout;
  private final DockerStreamPushDemux pushed = new DockerStreamPushDemux();

  UnixSocketAttachment(Path socket, String id) {
    this.id = id;
    try {
      ch = SocketChannel.open(UnixDomainSocketAddress.of(socket));
      io = new DuplexSocket(ch);
      String req =
          "POST /containers/"
              + id
              + "/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n"
              + "Host: docker\r\nUpgrade: tcp\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n";
      io.writeFully(ByteBuffer.wrap(req.getBytes(StandardCharsets.US_ASCII)));
      String head = readHead();
      String status = head.lines().findFirst().orElse("");
      if (!status.matches("HTTP/1\\.[01] (101|200) .*")) {
        ch.close();
        if (status.matches("HTTP/1\\.[01] 404 .*")) {
          throw gone(id);
        }
        throw new BackendUnavailableException(
            "Docker refused to attach to container " + id + ": " + status.strip());
      }
    } catch (IOException e) {
      throw new BackendUnavailableException(
          "cannot attach to container " + id + " over " + socket + ": " + e.getMessage(), e);
    }
  }

  /** Reads the response head byte by byte, so nothing of the stream after it is consumed. */
  private String readHead() throws IOException {
    StringBuilder sb = new StringBuilder();
    ByteBuffer one = ByteBuffer.allocate(1);
    while (sb.length() < MAX_HEAD) {
      one.clear();
      if (ch.read(one) < 0) {
        throw new IOException("connection closed during the attach handshake");
      }
      sb.append((char) (one.get(0) & 0xff));
      if (sb.length() >= 4 && sb.substring(sb.length() - 4).equals("\r\n\r\n")) {
        return sb.toString();
      }
    }
    throw new IOException("attach response head larger than " + MAX_HEAD + " bytes");
  }

  @Override
  public Optional<SelectableAgentStream> selectableStream() {
    try {
      io.nonBlocking();
    } catch (IOException e) {
      return Optional.empty();
    }
    return Optional.of(
        new SelectableAgentStream() {
          @Override
          public SelectableChannel channel() {
            return ch;
          }

          @Override
          public int read(ByteBuffer scratch, Consumer<ByteBuffer> out) throws IOException {
            scratch.clear();
            int n = ch.read(scratch);
            if (n > 0) {
              scratch.flip();
              pushed.push(scratch, out);
            }
            return n;
          }
        });
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public synchronized InputStream fromAgent() {
    DockerStreamDemux s = stdout;
    if (s == null) {
      // Buffered below the demultiplexer too: its 8-byte headers would each cost a system call.
      s = new DockerStreamDemux(new BufferedInputStream(io.input(), 1 << 18));
      stdout = s;
    }
    return s;
  }

  @Override
  public OutputStream toAgent() {
    return io.output();
  }

  @Override
  public String diagnostics() {
    DockerStreamDemux s;
    synchronized (this) {
      s = stdout;
    }
    return io.isNonBlocking() || s == null ? pushed.diagnostics() : s.diagnostics();
  }

  @Override
  public void close() {
    io.close();
  }

  /**
   * The container was removed between finding it and attaching (by hand, or another home's prune).
   */
  static SandboxNotFoundException gone(String id) {
    return new SandboxNotFoundException(
        "sandbox "
            + id
            + " is gone: its container was removed outside this process (docker rm, or a prune"
            + " elsewhere); 'agentnest ls' shows what is left");
  }
}
