package io.agentnest.docker.internal;

import java.nio.charset.StandardCharsets;

/** The last few KiB a container's main process wrote to stderr, kept for error messages. */
final class StderrTail {
  private static final int MAX = 4096;
  private final StringBuilder tail = new StringBuilder();

  void append(byte[] b, int off, int len) {
    synchronized (tail) {
      tail.append(new String(b, off, len, StandardCharsets.UTF_8));
      if (tail.length() > MAX) {
        tail.delete(0, tail.length() - MAX);
      }
    }
  }

  @Override
  public String toString() {
    synchronized (tail) {
      return tail.toString();
    }
  }
}
