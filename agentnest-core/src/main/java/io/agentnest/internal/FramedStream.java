package io.agentnest.internal;

import io.agentnest.AgentNestException;
import java.nio.ByteBuffer;

/**
 * Checks, as its bytes pass, the framing of a session's state on the bulk link: {@code u32 length +
 * extra pickle}, then chunks of {@code u32 length + bytes} (at most {@link #MAX_CHUNK} each), each
 * attempt ended by END (0) or ABORT (0xFFFFFFFF), at most {@link #MAX_ATTEMPTS} attempts. The host
 * never unpickles: it only makes sure the stream is what a session sends, and where it ends.
 */
public final class FramedStream {
  static final int MAX_CHUNK = 1 << 20;
  static final int MAX_EXTRA = 64 << 20;
  static final int MAX_ATTEMPTS = 4;
  private static final int END = 0;
  private static final int ABORT = -1;

  private enum State {
    EXTRA_LENGTH,
    EXTRA,
    LENGTH,
    BODY,
    DONE
  }

  private final String what;
  private State state = State.EXTRA_LENGTH;
  private int lengthBytes;
  private int length;
  private long remaining;
  private int attempts = 1;

  public FramedStream(String what) {
    this.what = what;
  }

  public boolean done() {
    return state == State.DONE;
  }

  /**
   * Checks the bytes from {@code b}'s position to its limit (without moving either) and returns how
   * many of them belong to the stream: all of them, or up to and including its END.
   *
   * @throws AgentNestException when the framing is broken
   */
  public int accept(ByteBuffer b) {
    int start = b.position();
    int end = b.limit();
    int i = start;
    while (i < end && state != State.DONE) {
      switch (state) {
        case EXTRA_LENGTH, LENGTH -> {
          length = (length << 8) | (b.get(i++) & 0xff);
          if (++lengthBytes == 4) {
            lengthBytes = 0;
            onLength();
            length = 0;
          }
        }
        case EXTRA, BODY -> {
          int take = (int) Math.min(remaining, end - i);
          i += take;
          remaining -= take;
          if (remaining == 0) {
            state = State.LENGTH;
          }
        }
        case DONE -> {}
      }
    }
    return i - start;
  }

  private void onLength() {
    int n = length;
    if (state == State.EXTRA_LENGTH) {
      if (n < 0 || n > MAX_EXTRA) {
        throw malformed();
      }
      remaining = n;
      state = n == 0 ? State.LENGTH : State.EXTRA;
      return;
    }
    if (n == END) {
      state = State.DONE;
    } else if (n == ABORT) {
      if (++attempts > MAX_ATTEMPTS) {
        throw malformed();
      }
    } else if (n < 0 || n > MAX_CHUNK) {
      throw malformed();
    } else {
      remaining = n;
      state = State.BODY;
    }
  }

  private AgentNestException malformed() {
    return new AgentNestException(what + " arrived malformed over the bulk link");
  }
}
