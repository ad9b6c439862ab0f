package io.agentnest.internal.channel;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.support.Json;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import org.jspecify.annotations.Nullable;

/**
 * The channel's wire format, both directions:
 *
 * <pre>MAGIC(2) | header_len u32 BE | payload_len u32 BE | header (JSON object) | payload</pre>
 *
 * Frames read from a sandbox are untrusted: lengths are bounded before anything is allocated, and
 * the header must be a JSON object.
 */
public final class FrameCodec {
  static final byte MAGIC0 = (byte) 0xA9;
  static final byte MAGIC1 = 'N';

  /** A header is JSON read with the shared mapper, whose string limit is the same bound. */
  public static final int MAX_HEADER = Json.MAX_STRING_LENGTH;

  public static final int MAX_PAYLOAD = 8 << 20;
  private static final ObjectMapper JSON = Json.MAPPER;

  private FrameCodec() {}

  public static byte[] encode(ObjectNode header, byte[] payload) {
    byte[] hb;
    try {
      hb = JSON.writeValueAsBytes(header);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    if (hb.length > MAX_HEADER || payload.length > MAX_PAYLOAD) {
      throw new IllegalArgumentException("frame too large: split the payload");
    }
    ByteBuffer buf = ByteBuffer.allocate(10 + hb.length + payload.length);
    buf.put(MAGIC0).put(MAGIC1).putInt(hb.length).putInt(payload.length).put(hb).put(payload);
    return buf.array();
  }

  public static void write(OutputStream out, ObjectNode header, byte[] payload) throws IOException {
    out.write(encode(header, payload));
    out.flush();
  }

  /** Reads one frame; returns null at a clean end of stream (between frames). */
  public static @Nullable Frame read(InputStream in) throws IOException {
    int m0 = in.read();
    if (m0 < 0) {
      return null;
    }
    int m1 = in.read();
    if (m1 < 0) {
      throw new EOFException("channel ended inside a frame");
    }
    checkMagic(m0, m1);
    byte[] lens = readExact(in, 8);
    ByteBuffer lb = ByteBuffer.wrap(lens);
    long hlen = Integer.toUnsignedLong(lb.getInt());
    long plen = Integer.toUnsignedLong(lb.getInt());
    checkLengths(hlen, plen);
    byte[] hb = readExact(in, (int) hlen);
    byte[] pb = plen == 0 ? new byte[0] : readExact(in, (int) plen);
    return new Frame(parseHeader(hb), pb);
  }

  // The checks below are shared with FrameDecoder, the push form of read(): both must refuse the
  // same input with the same words.

  static void checkMagic(int m0, int m1) throws ProtocolException {
    if ((byte) m0 != MAGIC0 || (byte) m1 != MAGIC1) {
      throw new ProtocolException(
          String.format("bad frame magic 0x%02x%02x from the sandbox", m0 & 0xff, m1 & 0xff));
    }
  }

  static void checkLengths(long hlen, long plen) throws ProtocolException {
    if (hlen == 0 || hlen > MAX_HEADER) {
      throw new ProtocolException("frame header length " + hlen + " out of bounds");
    }
    if (plen > MAX_PAYLOAD) {
      throw new ProtocolException("frame payload length " + plen + " out of bounds");
    }
  }

  static ObjectNode parseHeader(byte[] hb) throws ProtocolException {
    JsonNode node;
    try {
      node = JSON.readTree(hb);
    } catch (IOException e) {
      throw new ProtocolException("frame header is not valid JSON: " + e.getMessage());
    }
    if (node == null || !node.isObject()) {
      throw new ProtocolException("frame header is not a JSON object");
    }
    return (ObjectNode) node;
  }

  private static byte[] readExact(InputStream in, int n) throws IOException {
    // Into one array of the bounded length: readNBytes(int) would gather 8 KiB pieces and copy.
    byte[] b = new byte[n];
    if (in.readNBytes(b, 0, n) != n) {
      throw new EOFException("channel ended inside a frame");
    }
    return b;
  }
}
