package io.agentnest.internal.state;

import io.agentnest.AgentNestException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The bytes of one bulk stream between the parent that sends them and the copies that each take all
 * of them at their own pace, bounded: a chunk is dropped once every reader has taken it, and the
 * producer waits ({@link #awaitRoom}) while chunks of {@link #capacity} bytes are held. So the host
 * holds at most the capacity plus one chunk per stream, however large the state and however slow
 * the slowest copy; the slowest copy sets the pace (backpressure up to the parent's socket).
 *
 * <p>Chunks are direct buffers of {@link #CHUNK} bytes, recycled: a socket read or write needs no
 * extra copy. What is held is counted by the chunks' size, not by the bytes in them, so a sender
 * that trickles a few bytes per chunk gains nothing.
 */
final class RelayBuffer {
  static final int CHUNK = 1 << 20;

  private final long capacity;
  private final ArrayDeque<ByteBuffer> chunks = new ArrayDeque<>();
  private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();
  private final List<Reader> readers = new ArrayList<>();
  private long first; // index of chunks.peekFirst() in the whole stream
  private long buffered;
  private long highWater;
  private boolean complete;
  private @Nullable RuntimeException failure;

  RelayBuffer(long capacity) {
    this.capacity = capacity;
  }

  long capacity() {
    return capacity;
  }

  /** The most this buffer ever held at once (the chunks' size). */
  synchronized long highWater() {
    return highWater;
  }

  synchronized boolean full() {
    return buffered >= capacity;
  }

  /** A chunk to fill (cleared, capacity {@link #CHUNK}), recycled when possible. */
  synchronized ByteBuffer obtain() {
    ByteBuffer b = free.poll();
    return b != null ? b.clear() : ByteBuffer.allocateDirect(CHUNK);
  }

  /** Adds a filled chunk (flipped); never blocks: call {@link #awaitRoom} before filling one. */
  synchronized void append(ByteBuffer b) {
    throwIfFailed();
    chunks.addLast(b);
    buffered += b.capacity();
    highWater = Math.max(highWater, buffered);
    notifyAll();
  }

  /** Returns an unused chunk from {@link #obtain}. */
  synchronized void giveBack(ByteBuffer b) {
    recycle(b);
  }

  /**
   * Waits while the buffer is full and has readers to empty it, until {@code deadlineNanos}.
   *
   * @return false when it is full and has no reader yet (connect the copies, then call again)
   */
  synchronized boolean awaitRoom(long deadlineNanos) {
    while (buffered >= capacity) {
      throwIfFailed();
      if (readers.isEmpty()) {
        return false;
      }
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        throw new AgentNestException(
            "a copy took too long to read its state: gave up after waiting for room");
      }
      try {
        TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, TimeUnit.SECONDS.toNanos(1)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted while relaying a fork's state", e);
      }
    }
    throwIfFailed();
    return true;
  }

  /** Every chunk is in: readers end after the last one. */
  synchronized void complete() {
    complete = true;
    notifyAll();
  }

  /** Ends the stream with an error: the producer and every reader fail with it; memory is freed. */
  synchronized void fail(RuntimeException e) {
    if (failure == null) {
      failure = e;
    }
    chunks.clear();
    free.clear();
    buffered = 0;
    notifyAll();
  }

  /**
   * A reader from the start of the stream. All readers must be added before the first chunk is
   * dropped, i.e. before any of them reads.
   */
  synchronized Reader reader() {
    if (first > 0) {
      throw new IllegalStateException("readers must join before the stream is consumed");
    }
    Reader r = new Reader();
    readers.add(r);
    return r;
  }

  private void throwIfFailed() {
    RuntimeException f = failure;
    if (f != null) {
      throw f;
    }
  }

  private void recycle(ByteBuffer b) {
    // Keep enough recycled chunks to refill the buffer; let the rest go.
    if (free.size() * (long) CHUNK < capacity + CHUNK && b.capacity() == CHUNK) {
      free.push(b);
    }
  }

  /** Drops the chunks every reader is done with. Caller holds the monitor. */
  private void release() {
    long min = Long.MAX_VALUE;
    for (Reader r : readers) {
      min = Math.min(min, r.done);
    }
    while (first < min && !chunks.isEmpty()) {
      ByteBuffer b = chunks.pollFirst();
      buffered -= b.capacity();
      first++;
      recycle(b);
    }
    notifyAll();
  }

  /** One copy's position in the stream. */
  final class Reader {
    private long next; // index of the next chunk to take
    // chunks before this index are done with: the reader asks for the next one only after it has
    // written the one before (the one it holds now is never released under it)
    private long done;

    private Reader() {}

    /**
     * The next chunk (a view of its own, to write from), or null after the last one; the chunk
     * taken before is done with and may go. Blocks until there is one.
     */
    @Nullable ByteBuffer take() throws InterruptedException {
      synchronized (RelayBuffer.this) {
        if (done < next) {
          done = next;
          release();
        }
        while (next - first >= chunks.size() && !complete) {
          throwIfFailed();
          RelayBuffer.this.wait();
        }
        throwIfFailed();
        if (next - first >= chunks.size()) {
          return null;
        }
        ByteBuffer b = nth(next - first).duplicate();
        next++;
        return b;
      }
    }

    /** Done with this stream (its copy read everything, or failed): its chunks may go. */
    void finish() {
      synchronized (RelayBuffer.this) {
        next = Long.MAX_VALUE;
        done = Long.MAX_VALUE;
        release();
      }
    }
  }

  private ByteBuffer nth(long i) {
    int k = 0;
    for (ByteBuffer b : chunks) {
      if (k++ == i) {
        return b;
      }
    }
    throw new IllegalStateException("chunk " + i + " is gone");
  }
}
