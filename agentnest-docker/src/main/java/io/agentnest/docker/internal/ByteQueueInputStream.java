package io.agentnest.docker.internal;

import io.agentnest.spi.support.BlockInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A blocking pipe from our writers to docker-java's hijacked-input pump. Unlike {@link
 * java.io.PipedInputStream} it does not tie itself to the writing thread's liveness.
 */
final class ByteQueueInputStream extends BlockInputStream {
  private static final byte[] EOF = new byte[0];
  private final LinkedBlockingQueue<byte[]> queue = new LinkedBlockingQueue<>();
  private byte[] current = new byte[0];
  private int pos;
  private volatile boolean closed;

  final OutputStream writer =
      new OutputStream() {
        @Override
        public void write(int b) throws IOException {
          write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          if (closed) {
            throw new IOException("sandbox connection closed");
          }
          if (len > 0) {
            queue.add(Arrays.copyOfRange(b, off, off + len));
          }
        }

        @Override
        public void close() {
          ByteQueueInputStream.this.close();
        }
      };

  @Override
  protected int readBlock(byte[] b, int off, int len) throws IOException {
    while (pos >= current.length) {
      if (current == EOF) {
        return -1;
      }
      try {
        current = queue.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException();
      }
      pos = 0;
    }
    int n = Math.min(len, current.length - pos);
    System.arraycopy(current, pos, b, off, n);
    pos += n;
    return n;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      queue.add(EOF);
    }
  }
}
