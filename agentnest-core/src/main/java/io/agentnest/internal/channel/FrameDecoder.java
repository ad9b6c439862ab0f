package io.agentnest.internal.channel;

import java.io.EOFException;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The push form of {@link FrameCodec#read}: bytes arrive in pieces of any size (as a selector
 * delivers them) and complete frames come out. Same bounds, same errors: lengths are checked before
 * anything is allocated, so a hostile sandbox cannot make the host hold more than one frame's
 * bounded size per channel. Not thread-safe: one reader feeds it.
 */
final class FrameDecoder {
  private static final int PREFIX = 10;
  private static final byte[] EMPTY = new byte[0];

  private final byte[] prefix = new byte[PREFIX];
  private int prefixFill;
  private byte @Nullable [] header;
  private byte @Nullable [] payload;
  // Bytes of the current frame's header + payload copied so far.
  private int bodyFill;
  private boolean broken;

  /**
   * Decodes what {@code bytes} holds (consuming all of it) and passes each completed frame to
   * {@code frames}. After a {@link ProtocolException} the decoder refuses all further input: the
   * channel is unusable.
   */
  void feed(ByteBuffer bytes, Consumer<Frame> frames) throws ProtocolException {
    if (broken) {
      throw new ProtocolException("the channel already broke the protocol");
    }
    try {
      while (bytes.hasRemaining()) {
        if (header == null) {
          readPrefix(bytes);
        } else {
          readBody(bytes, frames);
        }
      }
    } catch (ProtocolException e) {
      broken = true;
      header = null;
      payload = null;
      throw e;
    }
  }

  private void readPrefix(ByteBuffer bytes) throws ProtocolException {
    int n = Math.min(PREFIX - prefixFill, bytes.remaining());
    int before = prefixFill;
    bytes.get(prefix, prefixFill, n);
    prefixFill += n;
    if (before < 2 && prefixFill >= 2) {
      FrameCodec.checkMagic(prefix[0], prefix[1]);
    }
    if (prefixFill < PREFIX) {
      return;
    }
    ByteBuffer lb = ByteBuffer.wrap(prefix, 2, 8);
    long hlen = Integer.toUnsignedLong(lb.getInt());
    long plen = Integer.toUnsignedLong(lb.getInt());
    FrameCodec.checkLengths(hlen, plen);
    header = new byte[(int) hlen];
    payload = plen == 0 ? EMPTY : new byte[(int) plen];
    bodyFill = 0;
  }

  private void readBody(ByteBuffer bytes, Consumer<Frame> frames) throws ProtocolException {
    byte[] h = header;
    byte[] p = payload;
    if (h == null || p == null) {
      throw new IllegalStateException("no frame in progress");
    }
    if (bodyFill < h.length) {
      int n = Math.min(h.length - bodyFill, bytes.remaining());
      bytes.get(h, bodyFill, n);
      bodyFill += n;
    }
    if (bodyFill >= h.length && bodyFill < h.length + p.length) {
      int off = bodyFill - h.length;
      int n = Math.min(p.length - off, bytes.remaining());
      bytes.get(p, off, n);
      bodyFill += n;
    }
    if (bodyFill == h.length + p.length) {
      header = null;
      payload = null;
      prefixFill = 0;
      bodyFill = 0;
      frames.accept(new Frame(FrameCodec.parseHeader(h), p));
    }
  }

  /** Drops the frame in progress and refuses all further input (the channel is being closed). */
  void discard() {
    broken = true;
    header = null;
    payload = null;
  }

  /** True when the stream may end here: between frames, not inside one. */
  boolean atFrameBoundary() {
    return header == null && prefixFill == 0;
  }

  /** The stream ended: fails when it ended inside a frame (as {@link FrameCodec#read} does). */
  void end() throws EOFException {
    if (!atFrameBoundary()) {
      throw new EOFException("channel ended inside a frame");
    }
  }
}
