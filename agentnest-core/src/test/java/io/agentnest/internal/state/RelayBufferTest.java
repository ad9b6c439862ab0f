package io.agentnest.internal.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AgentNestException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The fork relay's buffer: however much the parent sends and however slow a copy is, the host holds
 * at most the buffer's capacity plus one chunk, and every copy gets every byte in order.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RelayBufferTest {
  private static final long FAR = TimeUnit.MINUTES.toNanos(1);

  /** Produces {@code total} bytes in chunks of at most {@code piece}, waiting for room. */
  private static byte[] produce(RelayBuffer buffer, long total, int piece, long seed)
      throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    Random rnd = new Random(seed);
    long sent = 0;
    while (sent < total) {
      if (!buffer.awaitRoom(System.nanoTime() + FAR)) {
        throw new AssertionError("full with readers attached");
      }
      ByteBuffer b = buffer.obtain();
      int n = (int) Math.min(Math.min(piece, b.capacity()), total - sent);
      byte[] data = new byte[n];
      rnd.nextBytes(data);
      md.update(data);
      b.put(data).flip();
      buffer.append(b);
      sent += n;
    }
    buffer.complete();
    return md.digest();
  }

  /** Reads a reader to its end, at the pace {@code permits} allows (null: as fast as it can). */
  private static byte[] consume(RelayBuffer.Reader r, Semaphore permits) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    try {
      ByteBuffer b;
      while ((b = r.take()) != null) {
        if (permits != null) {
          permits.acquire();
        }
        byte[] data = new byte[b.remaining()];
        b.get(data);
        md.update(data);
      }
    } finally {
      r.finish();
    }
    return md.digest();
  }

  @Test
  void aStalledCopyHoldsTheParentBackAtTheCapacityNotTheStreamSize() throws Exception {
    long cap = 4L << 20;
    RelayBuffer buffer = new RelayBuffer(cap);
    RelayBuffer.Reader fast = buffer.reader();
    RelayBuffer.Reader slow = buffer.reader();
    Semaphore gate = new Semaphore(0);
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      Future<byte[]> sent = pool.submit(() -> produce(buffer, 64L << 20, RelayBuffer.CHUNK, 1));
      Future<byte[]> a = pool.submit(() -> consume(fast, null));
      Future<byte[]> b = pool.submit(() -> consume(slow, gate));
      // The slow copy takes nothing: the parent fills the buffer and then waits.
      for (int i = 0; i < 1000 && !buffer.full(); i++) {
        Thread.sleep(5);
      }
      assertThat(buffer.full()).isTrue();
      assertThat(sent.isDone()).as("the parent waits for the slowest copy").isFalse();
      gate.release(Integer.MAX_VALUE / 2);
      byte[] digest = sent.get(30, TimeUnit.SECONDS);
      assertThat(a.get(30, TimeUnit.SECONDS)).isEqualTo(digest);
      assertThat(b.get(30, TimeUnit.SECONDS)).isEqualTo(digest);
      assertThat(buffer.highWater()).isLessThanOrEqualTo(cap + RelayBuffer.CHUNK);
    } finally {
      pool.shutdownNow();
    }
  }

  /** Any capacity, any piece size (a trickling sender too), any number of copies. */
  @Property(tries = 40)
  void neverHoldsMoreThanItsCapacityPlusOneChunk(
      @ForAll @IntRange(min = 1, max = 8) int capChunks,
      @ForAll @IntRange(min = 1, max = 1 << 20) int piece,
      @ForAll @IntRange(min = 1, max = 4) int copies,
      @ForAll @IntRange(min = 1, max = 12) int totalMiB)
      throws Exception {
    long cap = (long) capChunks * RelayBuffer.CHUNK;
    RelayBuffer buffer = new RelayBuffer(cap);
    List<RelayBuffer.Reader> readers = new ArrayList<>();
    for (int i = 0; i < copies; i++) {
      readers.add(buffer.reader());
    }
    ExecutorService pool = Executors.newFixedThreadPool(copies + 1);
    try {
      List<Future<byte[]>> got = new ArrayList<>();
      for (RelayBuffer.Reader r : readers) {
        got.add(pool.submit(() -> consume(r, null)));
      }
      long total = (long) totalMiB << 20;
      // Few bytes per chunk cost a whole chunk: a trickle is bounded like a flood.
      byte[] digest =
          pool.submit(() -> produce(buffer, Math.min(total, 4000L * piece), piece, piece))
              .get(60, TimeUnit.SECONDS);
      for (Future<byte[]> f : got) {
        assertThat(f.get(30, TimeUnit.SECONDS)).isEqualTo(digest);
      }
      assertThat(buffer.highWater()).isLessThanOrEqualTo(cap + RelayBuffer.CHUNK);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void fullWithoutReadersAsksForTheCopiesInsteadOfWaiting() {
    RelayBuffer buffer = new RelayBuffer(RelayBuffer.CHUNK);
    buffer.append(buffer.obtain().put(new byte[10]).flip());
    assertThat(buffer.full()).isTrue();
    assertThat(buffer.awaitRoom(System.nanoTime() + FAR)).isFalse();
  }

  @Test
  void aFailureReachesTheParentAndEveryCopyAndFreesTheChunks() throws Exception {
    RelayBuffer buffer = new RelayBuffer(RelayBuffer.CHUNK);
    RelayBuffer.Reader r = buffer.reader();
    buffer.append(buffer.obtain().put(new byte[10]).flip());
    CompletableFuture<Void> waiting =
        CompletableFuture.runAsync(() -> buffer.awaitRoom(System.nanoTime() + FAR));
    buffer.fail(new AgentNestException("the bulk link to a copy failed: gone"));
    assertThatThrownBy(waiting::join).hasRootCauseMessage("the bulk link to a copy failed: gone");
    assertThatThrownBy(r::take).hasMessage("the bulk link to a copy failed: gone");
    assertThat(buffer.full()).isFalse();
  }
}
