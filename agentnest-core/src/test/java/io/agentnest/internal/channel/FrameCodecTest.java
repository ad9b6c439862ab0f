package io.agentnest.internal.channel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.support.Json;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class FrameCodecTest {

  private static InputStream in(byte[] bytes) {
    return new ByteArrayInputStream(bytes);
  }

  /** A frame with arbitrary header bytes and declared lengths. */
  private static byte[] rawFrame(long headerLen, long payloadLen, byte[] rest) {
    ByteBuffer b = ByteBuffer.allocate(10 + rest.length);
    b.put(FrameCodec.MAGIC0).put(FrameCodec.MAGIC1);
    b.putInt((int) headerLen).putInt((int) payloadLen).put(rest);
    return b.array();
  }

  private static byte[] rawFrame(String header, byte[] payload) {
    byte[] hb = header.getBytes(StandardCharsets.UTF_8);
    byte[] rest = new byte[hb.length + payload.length];
    System.arraycopy(hb, 0, rest, 0, hb.length);
    System.arraycopy(payload, 0, rest, hb.length, payload.length);
    return rawFrame(hb.length, payload.length, rest);
  }

  @Test
  void roundTrip() throws IOException {
    ObjectNode h = Json.object().put(Ops.EV, Ops.EV_OUT).put("id", 42).put("s", "o");
    h.putArray("argv").add("ls").add("-la");
    byte[] payload = {0, 1, 2, (byte) 0xff, 'x'};

    Frame f = FrameCodec.read(in(FrameCodec.encode(h, payload)));

    assertThat(f).isNotNull();
    assertThat(f.header()).isEqualTo(h);
    assertThat(f.payload()).containsExactly(payload);
    assertThat(f.ev()).isEqualTo(Ops.EV_OUT);
    assertThat(f.id()).isEqualTo(42L);
  }

  @Test
  void roundTripWithEmptyPayloadAndSeveralFramesThenCleanEof() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    FrameCodec.write(out, Json.object().put("id", 1), new byte[0]);
    FrameCodec.write(out, Json.object().put("id", 2), "hello".getBytes(StandardCharsets.UTF_8));
    FrameCodec.write(out, Json.object(), new byte[0]);
    InputStream s = in(out.toByteArray());

    Frame a = FrameCodec.read(s);
    Frame b = FrameCodec.read(s);
    Frame c = FrameCodec.read(s);

    assertThat(a.id()).isEqualTo(1);
    assertThat(a.payload()).isEmpty();
    assertThat(b.id()).isEqualTo(2);
    assertThat(new String(b.payload(), StandardCharsets.UTF_8)).isEqualTo("hello");
    assertThat(c.header().isEmpty()).isTrue();
    assertThat(c.ev()).isEmpty();
    assertThat(c.id()).isEqualTo(-1);
    assertThat(FrameCodec.read(s)).isNull();
    assertThat(FrameCodec.read(s)).isNull();
  }

  @Test
  void encodeLayoutIsMagicThenBigEndianLengths() {
    byte[] payload = new byte[300];
    byte[] frame = FrameCodec.encode(Json.object().put("a", 1), payload);
    byte[] header = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);

    ByteBuffer b = ByteBuffer.wrap(frame);
    assertThat(b.get()).isEqualTo((byte) 0xA9);
    assertThat(b.get()).isEqualTo((byte) 'N');
    assertThat(b.getInt()).isEqualTo(header.length);
    assertThat(b.getInt()).isEqualTo(300);
    assertThat(Arrays.copyOfRange(frame, 10, 10 + header.length)).isEqualTo(header);
    assertThat(frame).hasSize(10 + header.length + 300);
  }

  @Test
  void encodeRefusesOversizedPayload() {
    assertThatThrownBy(() -> FrameCodec.encode(Json.object(), new byte[FrameCodec.MAX_PAYLOAD + 1]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("too large");
  }

  @Test
  void maximalPayloadRoundTrips() throws IOException {
    byte[] payload = new byte[FrameCodec.MAX_PAYLOAD];
    payload[payload.length - 1] = 7;
    Frame f = FrameCodec.read(in(FrameCodec.encode(Json.object(), payload)));
    assertThat(f.payload()).hasSize(FrameCodec.MAX_PAYLOAD);
    assertThat(f.payload()[payload.length - 1]).isEqualTo((byte) 7);
  }

  @Test
  void cleanEofBeforeAFrameReturnsNull() throws IOException {
    assertThat(FrameCodec.read(in(new byte[0]))).isNull();
  }

  @Test
  void truncatedFramesThrowEofException() {
    byte[] frame =
        FrameCodec.encode(
            Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", 3), new byte[] {1, 2, 3, 4});
    // Every cut after the magic: inside the lengths, the header, or the payload.
    for (int cut = 2; cut < frame.length; cut++) {
      byte[] partial = Arrays.copyOf(frame, cut);
      assertThatThrownBy(() -> FrameCodec.read(in(partial)))
          .as("cut at %d of %d", cut, frame.length)
          .isExactlyInstanceOf(EOFException.class)
          .hasMessageContaining("inside a frame");
    }
  }

  @Test
  void streamEndingAfterFirstMagicByteIsAnIoError() {
    // A single magic byte then EOF is reported as an IOException (currently a ProtocolException
    // for a bad magic, not an EOFException).
    assertThatThrownBy(() -> FrameCodec.read(in(new byte[] {FrameCodec.MAGIC0})))
        .isInstanceOf(IOException.class);
  }

  @Test
  void truncatedPayloadAfterCompleteHeaderThrowsEof() {
    byte[] frame = rawFrame("{\"ev\":\"out\"}", new byte[10]);
    byte[] partial = Arrays.copyOf(frame, frame.length - 1);
    assertThatThrownBy(() -> FrameCodec.read(in(partial))).isExactlyInstanceOf(EOFException.class);
  }

  @Test
  void badMagicIsAProtocolViolation() {
    byte[] frame = FrameCodec.encode(Json.object(), new byte[0]);
    frame[0] = 'H';
    assertThatThrownBy(() -> FrameCodec.read(in(frame)))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("bad frame magic 0x48");

    byte[] second = FrameCodec.encode(Json.object(), new byte[0]);
    second[1] = 'X';
    assertThatThrownBy(() -> FrameCodec.read(in(second)))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("magic");

    byte[] text = "HTTP/1.1 200 OK\r\n".getBytes(StandardCharsets.US_ASCII);
    assertThatThrownBy(() -> FrameCodec.read(in(text))).isInstanceOf(ProtocolException.class);
  }

  @Test
  void zeroHeaderLengthIsAProtocolViolation() {
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame(0, 0, new byte[0]))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("header length 0 out of bounds");
  }

  @Test
  void oversizedHeaderLengthIsRefusedBeforeReading() {
    assertThatThrownBy(
            () -> FrameCodec.read(in(rawFrame(FrameCodec.MAX_HEADER + 1L, 0, new byte[0]))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("header length " + (FrameCodec.MAX_HEADER + 1L));
    // 0xFFFFFFFF is read as unsigned, not as -1.
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame(0xFFFFFFFFL, 0, new byte[0]))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("header length 4294967295 out of bounds");
  }

  @Test
  void oversizedPayloadLengthIsRefusedBeforeReading() {
    byte[] hb = "{}".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame(2, FrameCodec.MAX_PAYLOAD + 1L, hb))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("payload length " + (FrameCodec.MAX_PAYLOAD + 1L));
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame(2, 0x80000000L, hb))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("payload length 2147483648 out of bounds");
  }

  @Test
  void nonJsonHeaderIsAProtocolViolation() {
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame("not json at all", new byte[0]))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("not valid JSON");
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame("{\"a\":", new byte[0]))))
        .isInstanceOf(ProtocolException.class)
        .hasMessageContaining("not valid JSON");
  }

  @Test
  void nonObjectHeaderIsAProtocolViolation() {
    for (String header : new String[] {"[1,2,3]", "[]", "42", "\"ev\"", "null", "true", "   "}) {
      assertThatThrownBy(() -> FrameCodec.read(in(rawFrame(header, new byte[0]))))
          .as("header %s", header)
          .isInstanceOf(ProtocolException.class)
          .hasMessageContaining("not a JSON object");
    }
  }

  @Test
  void deeplyNestedHeaderIsAProtocolViolation() {
    String deep = "{\"a\":".repeat(200) + "1" + "}".repeat(200);
    assertThatThrownBy(() -> FrameCodec.read(in(rawFrame(deep, new byte[0]))))
        .isInstanceOf(ProtocolException.class);
  }

  // ---- properties: untrusted bytes only ever yield a Frame, null, or an IOException ----

  @Property(tries = 300)
  void arbitraryBytesNeverBreakTheReader(@ForAll @Size(max = 64) byte[] bytes) {
    readAllExpectingOnlyIoErrors(bytes);
  }

  @Property(tries = 300)
  void arbitraryBytesAfterMagicNeverBreakTheReader(@ForAll @Size(max = 64) byte[] tail) {
    byte[] bytes = new byte[tail.length + 2];
    bytes[0] = FrameCodec.MAGIC0;
    bytes[1] = FrameCodec.MAGIC1;
    System.arraycopy(tail, 0, bytes, 2, tail.length);
    readAllExpectingOnlyIoErrors(bytes);
  }

  @Property(tries = 300)
  void framesWithPlausibleLengthsNeverBreakTheReader(@ForAll("plausibleFrames") byte[] bytes) {
    readAllExpectingOnlyIoErrors(bytes);
  }

  @Property(tries = 200)
  void encodedFramesAlwaysRoundTrip(
      @ForAll @Size(max = 20) String key,
      @ForAll @Size(max = 50) String value,
      @ForAll @Size(max = 200) byte[] payload)
      throws IOException {
    ObjectNode h = Json.object().put(key, value);
    Frame f = FrameCodec.read(in(FrameCodec.encode(h, payload)));
    assertThat(f).isNotNull();
    assertThat(f.header()).isEqualTo(h);
    assertThat(f.payload()).isEqualTo(payload);
  }

  @Provide
  Arbitrary<byte[]> plausibleFrames() {
    Arbitrary<String> header =
        Arbitraries.oneOf(
            Arbitraries.strings().ofMaxLength(30),
            Arbitraries.strings().withChars("{}[]\":,0123456789abe .-\\").ofMaxLength(30),
            Arbitraries.of(
                "{}", "{\"ev\":\"out\"}", "[]", "{\"id\":1e999}", "{\"a\":\"\\ud800\"}"));
    Arbitrary<byte[]> payload = Arbitraries.bytes().array(byte[].class).ofMaxSize(16);
    Arbitrary<Integer> headerDelta = Arbitraries.integers().between(-3, 3);
    Arbitrary<Integer> payloadDelta = Arbitraries.integers().between(-3, 3);
    return Combinators.combine(header, payload, headerDelta, payloadDelta)
        .as(
            (h, p, hd, pd) -> {
              byte[] hb = h.getBytes(StandardCharsets.UTF_8);
              byte[] rest = new byte[hb.length + p.length];
              System.arraycopy(hb, 0, rest, 0, hb.length);
              System.arraycopy(p, 0, rest, hb.length, p.length);
              return rawFrame(
                  Math.max(0, hb.length + hd) & 0xffffffffL, Math.max(0, p.length + pd), rest);
            });
  }

  private static void readAllExpectingOnlyIoErrors(byte[] bytes) {
    InputStream s = in(bytes);
    for (int i = 0; i <= bytes.length; i++) {
      Frame f;
      try {
        f = FrameCodec.read(s);
      } catch (ProtocolException | EOFException e) {
        return;
      } catch (IOException e) {
        fail("unexpected IOException type " + e.getClass().getName(), e);
        return;
      } catch (RuntimeException | Error e) {
        fail("reader must only throw IOException, got " + e, e);
        return;
      }
      if (f == null) {
        return;
      }
      assertThat(f.header()).isNotNull();
      assertThat(f.header().isObject()).isTrue();
      assertThat(f.payload().length).isLessThanOrEqualTo(bytes.length);
    }
    fail("reader did not make progress over " + bytes.length + " bytes");
  }

  @Test
  void streamEndingAfterTheFirstMagicByteIsEndOfStreamNotBadMagic() {
    assertThatThrownBy(() -> FrameCodec.read(new ByteArrayInputStream(new byte[] {(byte) 0xA9})))
        .isInstanceOf(EOFException.class);
  }
}
