package io.agentnest.kubernetes.internal;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Keeps the last bytes written to it: a stream the sandbox writes (the agent's stderr) is drained
 * so it can never block the channel, and what is kept is bounded whatever the sandbox writes.
 */
final class ByteTail extends OutputStream {
  private final byte[] ring;
  private long written;

  ByteTail(int capacity) {
    this.ring = new byte[capacity];
  }

  @Override
  public synchronized void write(int b) {
    ring[(int) (written++ % ring.length)] = (byte) b;
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) {
    if (len >= ring.length) {
      off += len - ring.length;
      written += len - ring.length;
      len = ring.length;
    }
    for (int i = 0; i < len; i++) {
      ring[(int) (written++ % ring.length)] = b[off + i];
    }
  }

  /** The kept bytes as text (invalid UTF-8 replaced). */
  synchronized String text() {
    int n = (int) Math.min(written, ring.length);
    byte[] out = new byte[n];
    long start = written - n;
    for (int i = 0; i < n; i++) {
      out[i] = ring[(int) ((start + i) % ring.length)];
    }
    return new String(out, StandardCharsets.UTF_8);
  }
}
