package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MigrationStreamTest {
  @TempDir Path dir;

  private static long in(long millis) {
    return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
  }

  /** Writes {@code bytes} bytes into the pipe, then closes it (unless {@code keepOpen}). */
  private static CompletableFuture<Void> feed(Pipe p, long bytes, boolean keepOpen) {
    return CompletableFuture.runAsync(
        () -> {
          ByteBuffer b = ByteBuffer.allocate(8192);
          long left = bytes;
          try {
            while (left > 0) {
              b.clear().limit((int) Math.min(b.capacity(), left));
              while (b.hasRemaining()) {
                left -= p.sink().write(b);
              }
            }
            if (!keepOpen) {
              p.sink().close();
            }
          } catch (IOException e) {
            // the reader gave up: what the test checks
          }
        });
  }

  @Test
  void aStreamWithinItsBoundIsWrittenWhole() throws Exception {
    Pipe p = Pipe.open();
    feed(p, 300_000, false);
    Path out = dir.resolve("vmstate");
    assertThat(MigrationStream.receive(p.source(), out, 300_000, in(10_000))).isEqualTo(300_000);
    assertThat(Files.size(out)).isEqualTo(300_000);
  }

  @Test
  void aStreamLongerThanItsBoundIsRefusedNotCut() throws Exception {
    Pipe p = Pipe.open();
    feed(p, 1_000_000, false);
    assertThatThrownBy(
            () -> MigrationStream.receive(p.source(), dir.resolve("big"), 100_000, in(10_000)))
        .isInstanceOf(MigrationStream.TooLarge.class)
        .hasMessageContaining("longer than 100000 bytes");
    p.source().close();
  }

  @Test
  void aStreamThatNeverEndsMeetsTheDeadline() throws Exception {
    Pipe p = Pipe.open();
    feed(p, 10, true);
    assertThatThrownBy(
            () -> MigrationStream.receive(p.source(), dir.resolve("slow"), 1000, in(300)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("did not end in time (10 bytes so far)");
    p.sink().close();
    p.source().close();
  }

  @Test
  void aReaderThatTakesNothingMeetsTheSendDeadline() throws Exception {
    Path big = dir.resolve("state");
    Files.write(big, new byte[4 << 20]);
    Pipe p = Pipe.open();
    assertThatThrownBy(() -> MigrationStream.send(big, p.sink(), in(300)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("did not take the migration stream in time");
    p.sink().close();
    p.source().close();
  }

  @Test
  void theBoundIsTheGuestsMemoryAndAMargin() {
    assertThat(MigrationStream.bound(608)).isGreaterThan(608L << 20).isLessThan(700L << 20);
  }
}
