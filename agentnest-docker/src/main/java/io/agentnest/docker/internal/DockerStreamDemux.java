package io.agentnest.docker.internal;

import io.agentnest.spi.support.BlockInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Reads Docker's multiplexed attach stream (8-byte header per frame: stream type, 3 zero bytes, u32
 * size) and exposes stdout as a plain stream. Stderr goes to a small ring kept for error messages.
 */
final class DockerStreamDemux extends BlockInputStream {
  private final InputStream raw;
  private final byte[] header = new byte[8];
  private long remaining;
  private final StderrTail diag = new StderrTail();

  DockerStreamDemux(InputStream raw) {
    this.raw = raw;
  }

  @Override
  protected int readBlock(byte[] b, int off, int len) throws IOException {
    while (remaining == 0) {
      int got = raw.readNBytes(header, 0, 8);
      if (got < 8) {
        return -1;
      }
      long size =
          ((header[4] & 0xffL) << 24)
              | ((header[5] & 0xffL) << 16)
              | ((header[6] & 0xffL) << 8)
              | (header[7] & 0xffL);
      if (header[0] == 2) {
        captureStderr(size);
        continue;
      }
      remaining = size;
    }
    int n = raw.read(b, off, (int) Math.min(len, remaining));
    if (n < 0) {
      return -1;
    }
    remaining -= n;
    return n;
  }

  private void captureStderr(long size) throws IOException {
    long left = size;
    byte[] buf = new byte[(int) Math.min(8192, Math.max(1, size))];
    while (left > 0) {
      int n = raw.read(buf, 0, (int) Math.min(buf.length, left));
      if (n < 0) {
        return;
      }
      left -= n;
      diag.append(buf, 0, n);
    }
  }

  String diagnostics() {
    return diag.toString();
  }

  @Override
  public void close() throws IOException {
    raw.close();
  }
}
