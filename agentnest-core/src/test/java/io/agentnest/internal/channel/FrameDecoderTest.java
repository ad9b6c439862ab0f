package io.agentnest.internal.channel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.support.Json;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** The push decoder must accept and refuse exactly what {@link FrameCodec#read} does. */
class FrameDecoderTest {

  private static byte[] stream(List<Frame> frames) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Frame f : frames) {
      out.writeBytes(FrameCodec.encode(f.header(), f.payload()));
    }
    return out.toByteArray();
  }

  private static List<Frame> sample() {
    List<Frame> frames = new ArrayList<>();
    frames.add(new Frame(Json.object().put(Ops.EV, Ops.EV_READY), new byte[0]));
    frames.add(
        new Frame(
            Json.object().put(Ops.EV, Ops.EV_OUT).put("id", 7).put("s", "o"),
            "hello\n".getBytes(StandardCharsets.UTF_8)));
    frames.add(new Frame(Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", 7), new byte[] {0, 1}));
    return frames;
  }

  /** Feeds {@code bytes} cut at {@code cuts} (sorted offsets) and collects the frames. */
  private static List<Frame> decode(byte[] bytes, Iterable<Integer> cuts) throws IOException {
    FrameDecoder d = new FrameDecoder();
    List<Frame> out = new ArrayList<>();
    int from = 0;
    for (int cut : cuts) {
      d.feed(ByteBuffer.wrap(bytes, from, cut - from), out::add);
      from = cut;
    }
    d.feed(ByteBuffer.wrap(bytes, from, bytes.length - from), out::add);
    d.end();
    return out;
  }

  private static void assertSameFrames(List<Frame> got, List<Frame> want) {
    assertThat(got).hasSameSizeAs(want);
    for (int i = 0; i < want.size(); i++) {
      // As text: a long id that fits an int is parsed back as an int node.
      assertThat(got.get(i).header().toString()).isEqualTo(want.get(i).header().toString());
      assertThat(got.get(i).payload()).containsExactly(want.get(i).payload());
    }
  }

  @Test
  void splitAtEveryByteBoundaryDecodesTheSameFrames() throws IOException {
    List<Frame> frames = sample();
    byte[] bytes = stream(frames);
    for (int cut = 0; cut <= bytes.length; cut++) {
      assertSameFrames(decode(bytes, List.of(cut)), frames);
    }
  }

  @Test
  void oneByteAtATimeDecodesTheSameFrames() throws IOException {
    List<Frame> frames = sample();
    byte[] bytes = stream(frames);
    List<Integer> cuts = new ArrayList<>();
    for (int i = 1; i < bytes.length; i++) {
      cuts.add(i);
    }
    assertSameFrames(decode(bytes, cuts), frames);
  }

  @Property(tries = 300)
  void anySplitOfValidFramesDecodesToTheSameFrames(
      @ForAll("frames") @Size(min = 1, max = 6) List<Frame> frames,
      @ForAll @Size(max = 12) List<@IntRange(min = 0, max = 4096) Integer> rawCuts)
      throws IOException {
    byte[] bytes = stream(frames);
    TreeSet<Integer> cuts = new TreeSet<>();
    for (int c : rawCuts) {
      cuts.add(c % (bytes.length + 1));
    }
    assertSameFrames(decode(bytes, cuts), frames);
    // And the same frames as the blocking reader finds.
    InputStream in = new ByteArrayInputStream(bytes);
    List<Frame> blocking = new ArrayList<>();
    for (Frame f = FrameCodec.read(in); f != null; f = FrameCodec.read(in)) {
      blocking.add(f);
    }
    assertSameFrames(blocking, frames);
  }

  @Provide
  Arbitrary<List<Frame>> frames() {
    Arbitrary<ObjectNode> headers =
        Combinators.combine(
                Arbitraries.of(Ops.EV_OUT, Ops.EV_RESULT, Ops.EV_ERROR, Ops.EV_READY),
                Arbitraries.longs().between(0, Long.MAX_VALUE),
                Arbitraries.strings().ofMaxLength(40))
            .as((ev, id, s) -> Json.object().put(Ops.EV, ev).put("id", id).put("s", s));
    Arbitrary<byte[]> payloads = Arbitraries.bytes().array(byte[].class).ofMaxSize(2000);
    return Combinators.combine(headers, payloads).as(Frame::new).list();
  }

  private static byte[] raw(long headerLen, long payloadLen, byte[] rest) {
    ByteBuffer b = ByteBuffer.allocate(10 + rest.length);
    b.put(FrameCodec.MAGIC0).put(FrameCodec.MAGIC1);
    b.putInt((int) headerLen).putInt((int) payloadLen).put(rest);
    return b.array();
  }

  private static void feedAll(byte[] bytes) throws IOException {
    FrameDecoder d = new FrameDecoder();
    // Byte by byte: the error must come as soon as the bad part is in, whatever the split.
    for (byte b : bytes) {
      d.feed(ByteBuffer.wrap(new byte[] {b}), f -> {});
    }
    d.end();
  }

  @Test
  void badMagicIsRefusedWithTheBlockingReadersWords() {
    assertThatThrownBy(() -> feedAll(new byte[] {'H', 'T', 0, 0}))
        .isInstanceOf(ProtocolException.class)
        .hasMessage("bad frame magic 0x4854 from the sandbox");
  }

  @Test
  void headerLengthOutOfBoundsIsRefusedBeforeAllocating() {
    assertThatThrownBy(() -> feedAll(raw(0, 0, new byte[0])))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("frame header length 0 out of bounds");
    assertThatThrownBy(() -> feedAll(raw(0xFFFFFFFFL, 0, new byte[0])))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("frame header length 4294967295 out of bounds");
  }

  @Test
  void payloadLengthOutOfBoundsIsRefused() {
    assertThatThrownBy(() -> feedAll(raw(2, FrameCodec.MAX_PAYLOAD + 1L, new byte[0])))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("frame payload length " + (FrameCodec.MAX_PAYLOAD + 1L));
  }

  @Test
  void headerThatIsNotAJsonObjectIsRefused() {
    byte[] arr = "[1,2]".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> feedAll(raw(arr.length, 0, arr)))
        .isInstanceOf(ProtocolException.class)
        .hasMessage("frame header is not a JSON object");
    byte[] junk = "{nope".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> feedAll(raw(junk.length, 0, junk)))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("frame header is not valid JSON");
  }

  @Test
  void endInsideAFrameIsAnEofErrorAndBetweenFramesIsClean() throws IOException {
    byte[] whole = stream(sample());
    for (int cut = 1; cut < whole.length; cut++) {
      FrameDecoder d = new FrameDecoder();
      List<Frame> got = new ArrayList<>();
      d.feed(ByteBuffer.wrap(whole, 0, cut), got::add);
      if (d.atFrameBoundary()) {
        d.end();
      } else {
        assertThatThrownBy(d::end)
            .isInstanceOf(EOFException.class)
            .hasMessage("channel ended inside a frame");
      }
    }
    new FrameDecoder().end();
  }

  @Test
  void afterAViolationNothingMoreIsDecoded() throws IOException {
    FrameDecoder d = new FrameDecoder();
    assertThatThrownBy(() -> d.feed(ByteBuffer.wrap(new byte[] {1, 2}), f -> {}))
        .isInstanceOf(ProtocolException.class);
    byte[] good = stream(sample());
    assertThatThrownBy(() -> d.feed(ByteBuffer.wrap(good), f -> {}))
        .isInstanceOf(ProtocolException.class);
  }
}
