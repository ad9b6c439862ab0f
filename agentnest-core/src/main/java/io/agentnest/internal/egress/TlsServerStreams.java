package io.agentnest.internal.egress;

import io.agentnest.spi.support.BlockInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;

/**
 * The server side of a TLS connection over a pair of streams (a tunnel on the agent channel has no
 * socket, so {@link javax.net.ssl.SSLSocket} cannot be used): blocking reads and writes driven
 * through an {@link SSLEngine}.
 *
 * <p>Not thread-safe: one thread reads and writes (the interceptor serves one request after the
 * other).
 */
final class TlsServerStreams {
  private final SSLEngine engine;
  private final InputStream rawIn;
  private final OutputStream rawOut;
  private ByteBuffer netIn; // bytes read from the client, not yet unwrapped (read mode)
  private ByteBuffer appIn; // plaintext not yet handed out (read mode)
  private ByteBuffer netOut;
  private final byte[] readBuf;
  private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

  /** Records wrapped but not yet written: a handshake flight goes out in one write. */
  private boolean unflushed;

  private boolean closed;

  TlsServerStreams(SSLEngine engine, InputStream rawIn, OutputStream rawOut) {
    this.engine = engine;
    this.rawIn = rawIn;
    this.rawOut = rawOut;
    int packet = engine.getSession().getPacketBufferSize();
    this.netIn = ByteBuffer.allocate(packet);
    this.netIn.flip();
    this.appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
    this.appIn.flip();
    // Room for several records: a handshake flight, or a response head with its first records.
    this.netOut = ByteBuffer.allocate(4 * packet);
    this.readBuf = new byte[packet];
  }

  /** Runs the handshake; throws {@link SSLException} when the client refuses our certificate. */
  void handshake() throws IOException {
    engine.beginHandshake();
    HandshakeStatus hs = engine.getHandshakeStatus();
    while (hs != HandshakeStatus.FINISHED && hs != HandshakeStatus.NOT_HANDSHAKING) {
      switch (hs) {
        case NEED_WRAP -> hs = wrap(EMPTY);
        case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
          SSLEngineResult r = unwrapOnce();
          if (r == null) {
            throw new EOFException("the client closed the connection during the TLS handshake");
          }
          hs = r.getHandshakeStatus();
        }
        case NEED_TASK -> {
          Runnable task;
          while ((task = engine.getDelegatedTask()) != null) {
            task.run();
          }
          hs = engine.getHandshakeStatus();
        }
        default -> throw new SSLException("unexpected TLS handshake state " + hs);
      }
    }
    flushRecords();
  }

  final InputStream input =
      new BlockInputStream() {
        @Override
        protected int readBlock(byte[] b, int off, int len) throws IOException {
          while (!appIn.hasRemaining()) {
            if (closed || engine.isInboundDone()) {
              return -1;
            }
            SSLEngineResult r = unwrapOnce();
            if (r == null) {
              return -1;
            }
            drive(r.getHandshakeStatus());
          }
          int n = Math.min(len, appIn.remaining());
          appIn.get(b, off, n);
          return n;
        }

        @Override
        public int available() {
          return appIn.remaining();
        }
      };

  final OutputStream output =
      new OutputStream() {
        @Override
        public void write(int b) throws IOException {
          write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          ByteBuffer src = ByteBuffer.wrap(b, off, len);
          while (src.hasRemaining()) {
            drive(wrap(src));
          }
        }

        @Override
        public void flush() throws IOException {
          flushRecords();
        }

        @Override
        public void close() throws IOException {
          closeOutbound();
        }
      };

  /** Sends close_notify (best effort) and closes the raw output. */
  void closeOutbound() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      engine.closeOutbound();
      while (!engine.isOutboundDone()) {
        wrap(EMPTY);
      }
      flushRecords();
    } catch (IOException e) {
      // the client is gone
    }
    try {
      rawOut.close();
    } catch (IOException e) {
      // already closed
    }
  }

  /** Post-handshake messages (session tickets, key updates) arriving or due. */
  private void drive(HandshakeStatus hs) throws IOException {
    while (true) {
      switch (hs) {
        case NEED_WRAP -> hs = wrap(EMPTY);
        case NEED_TASK -> {
          Runnable task;
          while ((task = engine.getDelegatedTask()) != null) {
            task.run();
          }
          hs = engine.getHandshakeStatus();
        }
        default -> {
          return;
        }
      }
    }
  }

  /**
   * Wraps into netOut, after what is already waiting there: records are written out when netOut
   * cannot take another one, and by {@link #flushRecords()} (before the proxy waits to read, and
   * when the relay flushes), so a handshake flight or a response head and its body's first record
   * leave in one write instead of one per record.
   */
  private HandshakeStatus wrap(ByteBuffer src) throws IOException {
    while (true) {
      if (netOut.remaining() < packetSize()) {
        writeRecords();
        if (netOut.capacity() < packetSize()) {
          netOut = ByteBuffer.allocate(packetSize());
        }
      }
      SSLEngineResult r = engine.wrap(src, netOut);
      switch (r.getStatus()) {
        case OK, CLOSED -> {
          unflushed |= netOut.position() > 0;
          return r.getHandshakeStatus();
        }
        case BUFFER_OVERFLOW -> {
          writeRecords();
          if (netOut.remaining() < packetSize()) {
            netOut = ByteBuffer.allocate(Math.max(netOut.capacity() * 2, packetSize()));
          }
        }
        default -> throw new SSLException("TLS wrap failed: " + r.getStatus());
      }
    }
  }

  /** Writes the wrapped records (netOut in write mode: position = bytes waiting). */
  private void writeRecords() throws IOException {
    if (netOut.position() > 0) {
      rawOut.write(netOut.array(), netOut.arrayOffset(), netOut.position());
      netOut.clear();
    }
  }

  /** Writes the waiting records and flushes the raw stream. */
  private void flushRecords() throws IOException {
    writeRecords();
    if (unflushed) {
      unflushed = false;
      rawOut.flush();
    }
  }

  /** Unwraps one record (reading from the client as needed); null at the client's end. */
  private @Nullable SSLEngineResult unwrapOnce() throws IOException {
    while (true) {
      ByteBuffer dst = appendable();
      SSLEngineResult r = engine.unwrap(netIn, dst);
      dst.flip(); // dst is appIn: back to read mode, holding what was there and what is new
      switch (r.getStatus()) {
        case OK, CLOSED -> {
          return r;
        }
        case BUFFER_OVERFLOW -> {
          ByteBuffer bigger =
              ByteBuffer.allocate(
                  appIn.remaining() + engine.getSession().getApplicationBufferSize());
          bigger.put(appIn);
          bigger.flip();
          appIn = bigger;
        }
        case BUFFER_UNDERFLOW -> {
          if (!fill()) {
            return null;
          }
        }
        default -> throw new SSLException("TLS unwrap failed: " + r.getStatus());
      }
    }
  }

  /** appIn compacted and in write mode, as the destination of an unwrap. */
  private ByteBuffer appendable() {
    appIn.compact();
    return appIn;
  }

  /** Reads more client bytes into netIn; false at end of stream. */
  private boolean fill() throws IOException {
    // Whatever we owe the client goes out before we wait for it (it may be waiting for us).
    flushRecords();
    int n = rawIn.read(readBuf, 0, readBuf.length);
    if (n < 0) {
      return false;
    }
    if (netIn.capacity() - netIn.remaining() < n) {
      ByteBuffer bigger = ByteBuffer.allocate(netIn.remaining() + n + packetSize());
      bigger.put(netIn);
      bigger.flip();
      netIn = bigger;
    }
    netIn.compact();
    netIn.put(readBuf, 0, n);
    netIn.flip();
    return true;
  }

  private int packetSize() {
    return engine.getSession().getPacketBufferSize();
  }
}
