package io.agentnest.spi.support;

import java.io.IOException;
import java.io.InputStream;

/**
 * An input stream that reads in blocks only: a single-byte read and an empty read are answered
 * here, so a subclass writes {@link #readBlock} alone (the frame, tunnel and TLS adapters all did
 * the same three things first).
 */
public abstract class BlockInputStream extends InputStream {
  /** Reads 1 to {@code len} bytes ({@code len > 0}), blocking until some arrive; -1 at the end. */
  protected abstract int readBlock(byte[] b, int off, int len) throws IOException;

  @Override
  public final int read() throws IOException {
    byte[] one = new byte[1];
    int n = readBlock(one, 0, 1);
    return n < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public final int read(byte[] b, int off, int len) throws IOException {
    return len == 0 ? 0 : readBlock(b, off, len);
  }
}
