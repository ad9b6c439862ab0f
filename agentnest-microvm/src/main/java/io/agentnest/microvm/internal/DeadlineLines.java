package io.agentnest.microvm.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Reads newline-ended lines from a non-blocking Unix socket with a deadline and a length bound, so
 * a guest or monitor that says nothing, or too much, never holds the caller.
 */
final class DeadlineLines implements AutoCloseable {
  private final SocketChannel channel;
  private final Selector selector;
  private final int maxLine;
  private final ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

  DeadlineLines(SocketChannel channel, int maxLine) throws IOException {
    this.channel = channel;
    this.maxLine = maxLine;
    channel.configureBlocking(false);
    this.selector = Selector.open();
    channel.register(selector, SelectionKey.OP_READ);
  }

  /** Connects to {@code socket}, retrying while it does not exist yet, until {@code deadline}. */
  static SocketChannel connect(Path socket, long deadlineNanos) throws IOException {
    IOException last = null;
    while (System.nanoTime() < deadlineNanos) {
      SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
      try {
        ch.connect(UnixDomainSocketAddress.of(socket));
        return ch;
      } catch (IOException e) {
        ch.close();
        last = e;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while connecting to " + socket, e);
      }
    }
    throw new IOException("cannot connect to " + socket + (last == null ? "" : ": " + last));
  }

  /** The next line without its newline; empty at the deadline; throws at end of stream. */
  Optional<String> readLine(long deadlineNanos) throws IOException {
    while (true) {
      byte[] have = pending.toByteArray();
      for (int i = 0; i < have.length; i++) {
        if (have[i] == '\n') {
          pending.reset();
          pending.write(have, i + 1, have.length - i - 1);
          return Optional.of(new String(have, 0, i, StandardCharsets.UTF_8));
        }
      }
      if (have.length > maxLine) {
        throw new IOException("a line longer than " + maxLine + " bytes");
      }
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        return Optional.empty();
      }
      selector.select(Math.max(1, left / 1_000_000));
      selector.selectedKeys().clear();
      buf.clear();
      int n = channel.read(buf);
      if (n < 0) {
        throw new IOException("the other end closed the connection");
      }
      pending.write(buf.array(), 0, n);
    }
  }

  /** Bytes read after the last line returned. */
  byte[] rest() {
    return pending.toByteArray();
  }

  void write(String line) throws IOException {
    ByteBuffer out = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (out.hasRemaining()) {
      if (channel.write(out) == 0) {
        if (System.nanoTime() > deadline) {
          throw new IOException("the other end does not read");
        }
        try {
          Thread.sleep(1);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", e);
        }
      }
    }
  }

  /** Stops watching; the channel stays open (and goes back to blocking mode). */
  void detach() throws IOException {
    selector.close();
    channel.configureBlocking(true);
  }

  @Override
  public void close() throws IOException {
    selector.close();
  }
}
