package io.agentnest.spi.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import org.jspecify.annotations.Nullable;

/**
 * A backend's full-duplex connection to an agent over a socket channel (Docker's upgraded attach
 * socket, a microVM's virtio-serial socket): streams that read and write the channel directly,
 * concurrently, in blocking mode or, once {@link #nonBlocking()} was called for the host's shared
 * selector, with writes that wait for room on a selector of their own.
 *
 * <p>{@code Channels.newInputStream} and {@code newOutputStream} would serialise reads and writes
 * on the channel's blocking lock: a reader parked in {@code read} would hold every write.
 */
public final class DuplexSocket {
  private final SocketChannel ch;
  private final Object writeWait = new Object();
  private @Nullable Selector writeSelector; // guarded by writeWait; opened on the first full write
  private volatile boolean nonBlocking;
  private volatile boolean closed;
  private final InputStream in = new In();
  private final OutputStream out = new Out();

  public DuplexSocket(SocketChannel ch) {
    this.ch = ch;
  }

  public SocketChannel channel() {
    return ch;
  }

  /** Switches the channel to non-blocking mode (for a selector); writes then wait for room. */
  public void nonBlocking() throws IOException {
    ch.configureBlocking(false);
    nonBlocking = true;
  }

  public boolean isNonBlocking() {
    return nonBlocking;
  }

  /** Reads straight from the channel (blocking mode). */
  public InputStream input() {
    return in;
  }

  /** Writes whole buffers; fails once {@link #close} was called. */
  public OutputStream output() {
    return out;
  }

  /** Writes all of {@code b}, waiting for room in non-blocking mode. */
  public void writeFully(ByteBuffer b) throws IOException {
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

  public boolean isClosed() {
    return closed;
  }

  /** Closes the channel and the write selector; idempotent. */
  public void close() {
    if (closed) {
      return;
    }
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

  private final class In extends InputStream {
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

  private final class Out extends OutputStream {
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
