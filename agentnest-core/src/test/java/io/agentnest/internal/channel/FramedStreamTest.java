package io.agentnest.internal.channel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AgentNestException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** The framing check of a session's state on the bulk link, however the bytes are split. */
class FramedStreamTest {
  private static void u32(ByteArrayOutputStream out, int v) {
    out.write(v >>> 24);
    out.write(v >>> 16);
    out.write(v >>> 8);
    out.write(v);
  }

  /** extra + chunks of the given sizes (+ one ABORT first when asked) + END. */
  private static byte[] stream(int extra, List<Integer> chunks, boolean abortFirst) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    u32(out, extra);
    out.writeBytes(new byte[extra]);
    if (abortFirst) {
      u32(out, 3);
      out.writeBytes(new byte[3]);
      u32(out, -1);
    }
    for (int n : chunks) {
      u32(out, n);
      out.writeBytes(new byte[n]);
    }
    u32(out, 0);
    return out.toByteArray();
  }

  /** Feeds {@code bytes} in pieces of the given sizes; returns the bytes accepted. */
  private static int feed(FramedStream f, byte[] bytes, List<Integer> pieces) {
    int pos = 0;
    int accepted = 0;
    int i = 0;
    while (pos < bytes.length && !f.done()) {
      int n = Math.min(bytes.length - pos, pieces.get(i++ % pieces.size()));
      accepted += f.accept(ByteBuffer.wrap(bytes, pos, n));
      pos += n;
    }
    return accepted;
  }

  @Property(tries = 300)
  void aWellFramedStreamIsAcceptedUpToItsEndHoweverItIsSplit(
      @ForAll @IntRange(min = 0, max = 5000) int extra,
      @ForAll @Size(max = 8) List<@IntRange(min = 1, max = 3000) Integer> chunks,
      @ForAll boolean abortFirst,
      @ForAll("pieces") List<Integer> pieces) {
    byte[] s = stream(extra, chunks, abortFirst);
    byte[] trailing = new byte[s.length + 100];
    System.arraycopy(s, 0, trailing, 0, s.length);
    FramedStream f = new FramedStream("session 'x'");
    // Bytes after END are not part of the stream: they are never passed on.
    assertThat(feed(f, trailing, pieces)).isEqualTo(s.length);
    assertThat(f.done()).isTrue();
  }

  @Property(tries = 200)
  void aStreamCutShortIsNeverDone(
      @ForAll @Size(min = 1, max = 8) List<@IntRange(min = 1, max = 3000) Integer> chunks,
      @ForAll @IntRange(min = 1, max = 100_000) int cut) {
    byte[] s = stream(10, chunks, false);
    byte[] part = Arrays.copyOf(s, Math.min(cut, s.length - 1));
    FramedStream f = new FramedStream("session 'x'");
    f.accept(ByteBuffer.wrap(part));
    assertThat(f.done()).isFalse();
  }

  @Test
  void oversizedChunksExtrasAndTooManyAttemptsAreMalformed() {
    ByteArrayOutputStream big = new ByteArrayOutputStream();
    u32(big, 0);
    u32(big, FramedStream.MAX_CHUNK + 1);
    assertThatThrownBy(() -> new FramedStream("s").accept(ByteBuffer.wrap(big.toByteArray())))
        .isInstanceOf(AgentNestException.class)
        .hasMessage("s arrived malformed over the bulk link");
    ByteArrayOutputStream extra = new ByteArrayOutputStream();
    u32(extra, FramedStream.MAX_EXTRA + 1);
    assertThatThrownBy(() -> new FramedStream("s").accept(ByteBuffer.wrap(extra.toByteArray())))
        .isInstanceOf(AgentNestException.class);
    ByteArrayOutputStream aborts = new ByteArrayOutputStream();
    u32(aborts, 0);
    for (int i = 0; i < FramedStream.MAX_ATTEMPTS; i++) {
      u32(aborts, -1);
    }
    assertThatThrownBy(() -> new FramedStream("s").accept(ByteBuffer.wrap(aborts.toByteArray())))
        .isInstanceOf(AgentNestException.class);
  }

  @Provide
  Arbitrary<List<Integer>> pieces() {
    return Arbitraries.integers().between(1, 4096).list().ofMinSize(1).ofMaxSize(10);
  }
}
