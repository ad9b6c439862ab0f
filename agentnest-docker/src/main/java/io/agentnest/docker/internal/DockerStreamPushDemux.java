package io.agentnest.docker.internal;

import java.nio.ByteBuffer;
import java.util.function.Consumer;

/**
 * {@link DockerStreamDemux} for bytes pushed in pieces of any size (a non-blocking read): takes off
 * the 8-byte stream headers, passes stdout on, keeps the tail of stderr for error messages.
 */
final class DockerStreamPushDemux {
  private final byte[] header = new byte[8];
  private int headerFill;
  private long remaining;
  private boolean stderr;
  private final StderrTail diag = new StderrTail();
  private final byte[] stderrCopy = new byte[4096];

  /** Consumes all of {@code bytes}; stdout slices of it go to {@code stdout}. */
  void push(ByteBuffer bytes, Consumer<ByteBuffer> stdout) {
    while (bytes.hasRemaining()) {
      if (remaining == 0) {
        int n = Math.min(8 - headerFill, bytes.remaining());
        bytes.get(header, headerFill, n);
        headerFill += n;
        if (headerFill == 8) {
          headerFill = 0;
          stderr = header[0] == 2;
          remaining =
              ((header[4] & 0xffL) << 24)
                  | ((header[5] & 0xffL) << 16)
                  | ((header[6] & 0xffL) << 8)
                  | (header[7] & 0xffL);
        }
        continue;
      }
      int n = (int) Math.min(remaining, bytes.remaining());
      remaining -= n;
      if (stderr) {
        while (n > 0) {
          int k = Math.min(n, stderrCopy.length);
          bytes.get(stderrCopy, 0, k);
          diag.append(stderrCopy, 0, k);
          n -= k;
        }
      } else {
        int end = bytes.position() + n;
        ByteBuffer slice = bytes.duplicate();
        slice.limit(end);
        bytes.position(end);
        stdout.accept(slice);
      }
    }
  }

  String diagnostics() {
    return diag.toString();
  }
}
