package io.agentnest.microvm.internal;

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
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A connection to a guest's agent: the virtio-serial port's host end, a Unix socket of QEMU's,
 * relayed by the guest init to the agent's stdin and stdout. Full duplex; read either as a stream
 * or from the host's shared selector, as Docker's attach socket is.
 */
public final class VmConnection implements BackendSandbox {
  private final String id;
  private final SocketChannel ch;
  private final Supplier<String> diagnostics;
  private byte @Nullable [] leftover; // agent bytes that arrived with the handshake
  private final Object writeWait = new Object();
  private @Nullable Selector writeSelector; // guarded by writeWait
  private volatile boolean nonBlocking;
  private volatile boolean closed;
  private @Nullable InputStream in;
  private final OutputStream out = new ChannelOut();

  /**
   * @param ch a connected channel, in blocking mode
   * @param leftover bytes already read from it that belong to the agent
   * @param diagnostics the guest console's tail, for error messages
   */
  public VmConnection(String id, SocketChannel ch, byte[] leftover, Supplier<String> diagnostics) {
    this.id = id;
    this.ch = ch;
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
      InputStream raw = new BufferedInputStream(new ChannelIn(), 1 << 16);
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
      ch.configureBlocking(false);
    } catch (IOException e) {
      return Optional.empty();
    }
    nonBlocking = true;
    return Optional.of(
        new SelectableAgentStream() {
          @Override
          public SelectableChannel channel() {
            return ch;
          }

          @Override
          public int read(ByteBuffer scratch, Consumer<ByteBuffer> stdout) throws IOException {
            byte[] first;
            synchronized (VmConnection.this) {
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
    return out;
  }

  @Override
  public String diagnostics() {
    return diagnostics.get();
  }

  @Override
  public void close() {
    closed = true;
    try {
      ch.close();
    } catch (IOException ignored) {
      // already closed
    }
    synchronized (writeWait) {
      Selector sel = writeSelector;
      if (sel != null) {
        try {
          sel.close();
        } catch (IOException ignored) {
          // nothing held beyond the descriptor
        }
      }
    }
  }

  private void writeFully(ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (ch.write(b) == 0 && nonBlocking) {
        awaitWritable();
      }
    }
  }

  private void awaitWritable() throws IOException {
    synchronized (writeWait) {
      if (closed) {
        throw new IOException("sandbox connection closed");
      }
      Selector sel = writeSelector;
      if (sel == null) {
        sel = Selector.open();
        ch.register(sel, SelectionKey.OP_WRITE);
        writeSelector = sel;
      }
      // Bounded waits: a close() meanwhile must end the write, not leave it parked.
      sel.select(200);
      sel.selectedKeys().clear();
    }
  }

  // SocketChannel reads and writes proceed concurrently; Channels.newInputStream would serialise
  // them on the channel's blocking lock, so these adapters call the channel directly.
  private final class ChannelIn extends InputStream {
    @Override
    public int read() throws IOException {
      byte[] b = new byte[1];
      int n = read(b, 0, 1);
      return n < 0 ? -1 : b[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return len == 0 ? 0 : ch.read(ByteBuffer.wrap(b, off, len));
    }
  }

  private final class ChannelOut extends OutputStream {
    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (closed) {
        throw new IOException("sandbox connection closed");
      }
      writeFully(ByteBuffer.wrap(b, off, len));
    }
  }
}
