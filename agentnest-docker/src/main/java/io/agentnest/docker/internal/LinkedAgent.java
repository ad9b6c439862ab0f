package io.agentnest.docker.internal;

import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SelectableAgentStream;
import io.agentnest.spi.support.DuplexSocket;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SocketChannel;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The agent's channel over its link: the Unix socket the agent connected to at start ({@link
 * AgentLinks}), read and written directly. No engine process is in the path, so a call's round trip
 * no longer waits on dockerd and the shim, which a pool's refill (container creates and starts)
 * keeps busy. Frames come raw: no stream multiplexing to undo.
 */
final class LinkedAgent implements BackendSandbox {
  private final String id;
  private final SocketChannel ch;
  private final DuplexSocket io;
  private final Supplier<String> state;
  private @Nullable InputStream in;

  /** {@code state} says what became of the container, asked only once the channel failed. */
  LinkedAgent(String id, SocketChannel ch, Supplier<String> state) {
    this.id = id;
    this.ch = ch;
    this.io = new DuplexSocket(ch);
    this.state = state;
  }

  @Override
  public String id() {
    return id;
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
              out.accept(scratch);
            }
            return n;
          }
        });
  }

  @Override
  public synchronized InputStream fromAgent() {
    InputStream s = in;
    if (s == null) {
      s = new BufferedInputStream(io.input(), 1 << 16);
      in = s;
    }
    return s;
  }

  @Override
  public OutputStream toAgent() {
    return io.output();
  }

  @Override
  public String diagnostics() {
    // The agent's stderr is /dev/null once it runs; what the engine knows of the container is
    // what is left to say (its exit status, a kill for memory).
    try {
      return state.get();
    } catch (RuntimeException e) {
      return "";
    }
  }

  @Override
  public void close() {
    io.close();
  }
}
