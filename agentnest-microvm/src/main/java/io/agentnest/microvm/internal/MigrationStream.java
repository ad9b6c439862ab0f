package io.agentnest.microvm.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;

/**
 * A guest's migration stream between QEMU and a file, bounded in size and time: QEMU is on the
 * guest's side of the boundary (a guest that broke out holds it), so a stream that never ends, or
 * is longer than the guest's memory can explain, is refused and never waited on forever.
 */
final class MigrationStream {
  private static final int BUFFER = 1 << 20;

  private MigrationStream() {}

  /** The stream was longer than its bound. */
  static final class TooLarge extends IOException {
    private static final long serialVersionUID = 1L;

    TooLarge(long max) {
      super(
          "the guest's migration stream is longer than "
              + max
              + " bytes (its memory and a margin): refused");
    }
  }

  /**
   * The most a stream of a guest with {@code memoryMiB} of RAM may hold: every page once with its
   * header (a paused guest is sent in one pass; zero pages take a few bytes), and device state.
   */
  static long bound(long memoryMiB) {
    long ram = memoryMiB << 20;
    return ram + ram / 64 + (32L << 20);
  }

  /** Accepts one connection on {@code server} before {@code deadline}. */
  static SocketChannel accept(ServerSocketChannel server, long deadline) throws IOException {
    server.configureBlocking(false);
    try (Selector sel = Selector.open()) {
      server.register(sel, SelectionKey.OP_ACCEPT);
      while (true) {
        SocketChannel ch = server.accept();
        if (ch != null) {
          return ch;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IOException("QEMU did not connect to send the migration stream in time");
        }
        sel.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        sel.selectedKeys().clear();
      }
    }
  }

  /**
   * Reads {@code in} to its end into the new file {@code out}: at most {@code max} bytes (else
   * {@link TooLarge}), before {@code deadline} (else an IOException). Returns the bytes read.
   */
  static <C extends SelectableChannel & ReadableByteChannel> long receive(
      C in, Path out, long max, long deadline) throws IOException {
    in.configureBlocking(false);
    ByteBuffer buf = ByteBuffer.allocate(BUFFER);
    long total = 0;
    try (Selector sel = Selector.open();
        FileChannel file =
            FileChannel.open(
                out,
                StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
      in.register(sel, SelectionKey.OP_READ);
      while (true) {
        buf.clear();
        int n = in.read(buf);
        if (n < 0) {
          return total;
        }
        if (n == 0) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            throw new IOException(
                "the guest's migration stream did not end in time (" + total + " bytes so far)");
          }
          sel.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
          sel.selectedKeys().clear();
          continue;
        }
        total += n;
        if (total > max) {
          throw new TooLarge(max);
        }
        buf.flip();
        while (buf.hasRemaining()) {
          file.write(buf);
        }
      }
    }
  }

  /** Writes file {@code in} whole to {@code out} before {@code deadline}. */
  static <C extends SelectableChannel & WritableByteChannel> void send(
      Path in, C out, long deadline) throws IOException {
    out.configureBlocking(false);
    ByteBuffer buf = ByteBuffer.allocate(BUFFER);
    try (Selector sel = Selector.open();
        FileChannel file =
            FileChannel.open(in, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      out.register(sel, SelectionKey.OP_WRITE);
      while (true) {
        buf.clear();
        if (file.read(buf) < 0) {
          return;
        }
        buf.flip();
        while (buf.hasRemaining()) {
          if (out.write(buf) == 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
              throw new IOException("QEMU did not take the migration stream in time");
            }
            sel.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            sel.selectedKeys().clear();
          }
        }
      }
    }
  }
}
