package io.agentnest.internal.egress;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.GZIPInputStream;
import java.util.zip.Inflater;
import java.util.zip.InflaterInputStream;
import org.jspecify.annotations.Nullable;

/**
 * A response body as the sandbox's client will read it: transfer framing removed (a chunk boundary
 * can fall inside a secret) and gzip or deflate codings undone (a compressed echo hides one), so
 * that the credential can be masked on the bytes that matter. A coding the proxy cannot undo is
 * refused rather than relayed unmasked.
 */
final class DecodedBody {
  private static final Set<String> DECODABLE = Set.of("gzip", "x-gzip", "deflate", "identity");
  private static final int BUFFER = 64 * 1024;

  private DecodedBody() {}

  /**
   * The codings applied to the body, in the order they were applied: content codings, then transfer
   * codings other than the final {@code chunked} ({@code identity} left out).
   */
  static List<String> codings(Head response) {
    List<String> out = new ArrayList<>();
    for (String header : List.of("content-encoding", "transfer-encoding")) {
      for (String value : response.all(header)) {
        for (String part : value.split(",", -1)) {
          String c = part.trim().toLowerCase(Locale.ROOT);
          int semi = c.indexOf(';');
          c = (semi < 0 ? c : c.substring(0, semi)).trim();
          if (!c.isEmpty() && !c.equals("identity")) {
            out.add(c);
          }
        }
      }
    }
    if (!out.isEmpty() && out.get(out.size() - 1).equals("chunked")) {
      out.remove(out.size() - 1); // the framing, which the content stream removes
    }
    return out;
  }

  /** The first coding in {@code codings} the proxy cannot undo, or null when it can undo all. */
  static @Nullable String undecodable(List<String> codings) {
    for (String c : codings) {
      if (!DECODABLE.contains(c)) {
        return c;
      }
    }
    return null;
  }

  /** The body's bytes without its framing, counting what is read from {@code in}. */
  static InputStream content(BodyFraming framing, InputStream in, AtomicLong count) {
    return new ContentInput(framing, in, count);
  }

  /** {@code content} with {@code codings} undone, last applied first. */
  static InputStream decode(InputStream content, List<String> codings) throws IOException {
    InputStream s = content;
    for (int i = codings.size() - 1; i >= 0; i--) {
      String c = codings.get(i);
      s =
          switch (c) {
            case "gzip", "x-gzip" -> new GZIPInputStream(s, BUFFER);
            case "deflate" -> inflating(s);
            default -> throw new IOException("cannot decode the coding " + c);
          };
    }
    return s;
  }

  /** "deflate" is zlib-wrapped by the standard; some servers send it raw. */
  private static InputStream inflating(InputStream in) throws IOException {
    PushbackInputStream p = new PushbackInputStream(in, 2);
    byte[] head = p.readNBytes(2);
    p.unread(head);
    boolean zlib =
        head.length == 2
            && (head[0] & 0x0f) == 8
            && (((head[0] & 0xff) << 8) | (head[1] & 0xff)) % 31 == 0;
    return new InflaterInputStream(p, new Inflater(!zlib), BUFFER);
  }

  /**
   * Copies one response body to the client: de-framed, decoded, masked, then framed for the client
   * (chunked when {@code chunkedOut}); what is held back is dropped if the body breaks off.
   */
  static void relay(
      BodyFraming framing,
      List<String> codings,
      boolean chunkedOut,
      InputStream uin,
      OutputStream cout,
      AtomicLong down,
      List<byte[]> secrets)
      throws IOException, BadMessage {
    if (framing.kind == BodyFraming.Kind.NONE) {
      return;
    }
    ChunkedOutput chunked = chunkedOut ? new ChunkedOutput(cout) : null;
    MaskingOutputStream masked = new MaskingOutputStream(chunked == null ? cout : chunked, secrets);
    InputStream content = content(framing, uin, down);
    try {
      InputStream decoded = decode(content, codings);
      byte[] buf = new byte[BodyFraming.BUFFER_SIZE];
      int n;
      while ((n = decoded.read(buf)) >= 0) {
        masked.write(buf, 0, n);
        if (uin.available() == 0) {
          masked.flush(); // streamed responses (events, progress) reach the client as they come
        }
      }
      // A coded body can end before its framing does: what is left is read and dropped.
      content.transferTo(OutputStream.nullOutputStream());
    } catch (BadMessageIo e) {
      masked.abandon();
      throw new BadMessage(String.valueOf(e.getMessage()));
    } catch (IOException e) {
      masked.abandon();
      throw e;
    }
    masked.finish();
    if (chunked != null) {
      chunked.finish();
    }
  }

  /** Reads one message body's content: exactly its length, its chunks' data, or to the close. */
  private static final class ContentInput extends InputStream {
    private final BodyFraming framing;
    private final InputStream in;
    private final LineReader lines;
    private final AtomicLong count;
    private long left; // of the body (LENGTH) or of the current chunk (CHUNKED)
    private boolean started;
    private boolean done;

    ContentInput(BodyFraming framing, InputStream in, AtomicLong count) {
      this.framing = framing;
      this.in = in;
      this.lines = new LineReader(in);
      this.count = count;
      this.left = framing.kind == BodyFraming.Kind.LENGTH ? framing.length : 0;
      this.done = framing.kind == BodyFraming.Kind.NONE;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int n = read(one, 0, 1);
      return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (done) {
        return -1;
      }
      switch (framing.kind) {
        case UNTIL_CLOSE -> {
          int n = in.read(b, off, len);
          if (n < 0) {
            done = true;
          } else {
            count.addAndGet(n);
          }
          return n;
        }
        case LENGTH -> {
          if (left == 0) {
            done = true;
            return -1;
          }
          return readSome(b, off, len);
        }
        default -> {
          if (left == 0 && !nextChunk()) {
            done = true;
            return -1;
          }
          return readSome(b, off, len);
        }
      }
    }

    private int readSome(byte[] b, int off, int len) throws IOException {
      int n = in.read(b, off, (int) Math.min(len, left));
      if (n < 0) {
        throw new ClientBodyException("the response body ended " + left + " bytes early", null);
      }
      left -= n;
      count.addAndGet(n);
      return n;
    }

    /** Reads up to the next chunk's data; false after the last chunk (trailers dropped). */
    private boolean nextChunk() throws IOException {
      long before = lines.bytes;
      try {
        if (started && !line(0, "chunk end").isEmpty()) {
          throw new BadMessageIo("missing CRLF after a chunk");
        }
        started = true;
        String sizeLine = line(BodyFraming.MAX_CHUNK_LINE, "chunk size line");
        int semi = sizeLine.indexOf(';');
        String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).strip();
        if (!hex.matches("[0-9A-Fa-f]{1,15}")) {
          throw new BadMessageIo("invalid chunk size");
        }
        left = Long.parseLong(hex, 16);
        if (left > 0) {
          return true;
        }
        // Trailer fields are dropped: they could carry an echo, and none is needed downstream.
        long trailerStart = lines.bytes;
        for (int i = 0; ; i++) {
          long remaining = Head.MAX_HEADER_BYTES - (lines.bytes - trailerStart);
          if (i > Head.MAX_HEADERS || remaining <= 0) {
            throw new BadMessageIo("the chunked trailer is too large");
          }
          if (line((int) remaining, "chunked trailer").isEmpty()) {
            return false;
          }
        }
      } finally {
        count.addAndGet(lines.bytes - before);
      }
    }

    private String line(int max, String what) throws IOException {
      String s;
      try {
        s = lines.read(max, what);
      } catch (BadMessage e) {
        throw new BadMessageIo(String.valueOf(e.getMessage()));
      }
      if (s == null) {
        throw new ClientBodyException("the response body ended early", null);
      }
      return s;
    }
  }

  /** A framing error found while reading a body through an InputStream. */
  static final class BadMessageIo extends IOException {
    private static final long serialVersionUID = 1L;

    BadMessageIo(String message) {
      super(message);
    }
  }

  /** Writes each write as one chunk; {@link #finish()} writes the last chunk. */
  static final class ChunkedOutput extends FilterOutputStream {
    ChunkedOutput(OutputStream out) {
      super(out);
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return; // a zero-length chunk would end the body
      }
      out.write((Integer.toHexString(len) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      out.write(b, off, len);
      out.write(CRLF);
    }

    void finish() throws IOException {
      out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
    }

    private static final byte[] CRLF = {'\r', '\n'};
  }
}
