package io.agentnest.spi.support;

import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SelectableAgentStream;
import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * An agent's channel that is one plain, full-duplex socket carrying the frames as they are: a
 * microVM guest's virtio-serial port (QEMU's Unix socket, relayed by the guest init to the agent),
 * or the Docker backend's agent link (a Unix socket the agent connected to). Read either as a
 * stream or from the host's shared selector.
 */
public final class SocketConnection implements BackendSandbox {
  private final String id;
  private final SocketChannel ch;
  private final Supplier<String> diagnostics;
  private final DuplexSocket io;
  private byte @Nullable [] leftover; // agent bytes that arrived with the handshake
  private @Nullable InputStream in;

  /**
   * @param ch a connected channel, in blocking mode
   * @param leftover bytes already read from it that belong to the agent
   * @param diagnostics what is known of the agent's end (a guest console's tail, a container's exit
   *     status), asked only for error messages
   */
  public SocketConnection(
      String id, SocketChannel ch, byte[] leftover, Supplier<String> diagnostics) {
    this.id = id;
    this.ch = ch;
    this.io = new DuplexSocket(ch);
    this.leftover = leftover.length == 0 ? null : leftover.clone();
    this.diagnostics = diagnostics;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public synchronized InputStream fromAgent() {
    InputStream s = in;
    if (s == null) {
      InputStream raw = new BufferedInputStream(io.input(), 1 << 16);
      byte[] first = leftover;
      leftover = null;
      s = first == null ? raw : new SequenceInputStream(new ByteArrayInputStream(first), raw);
      in = s;
    }
    return s;
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
          public int read(ByteBuffer scratch, Consumer<ByteBuffer> stdout) throws IOException {
            byte[] first;
            synchronized (SocketConnection.this) {
              first = leftover;
              leftover = null;
            }
            if (first != null) {
              stdout.accept(ByteBuffer.wrap(first));
            }
            scratch.clear();
            int n = ch.read(scratch);
            if (n > 0) {
              scratch.flip();
              stdout.accept(scratch);
            }
            return first != null && n == 0 ? first.length : n;
          }
        });
  }

  @Override
  public OutputStream toAgent() {
    return io.output();
  }

  @Override
  public String diagnostics() {
    try {
      return diagnostics.get();
    } catch (RuntimeException e) {
      return "";
    }
  }

  @Override
  public void close() {
    io.close();
  }
}
