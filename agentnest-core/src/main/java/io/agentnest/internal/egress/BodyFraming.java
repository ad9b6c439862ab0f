package io.agentnest.internal.egress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** How a message body is delimited, and a bounded-buffer copy of exactly that body. */
final class BodyFraming {
  static final int MAX_CHUNK_LINE = 4 * 1024;
  static final int BUFFER_SIZE = 64 * 1024;

  enum Kind {
    NONE,
    LENGTH,
    CHUNKED,
    UNTIL_CLOSE
  }

  final Kind kind;
  final long length;

  private BodyFraming(Kind kind, long length) {
    this.kind = kind;
    this.length = length;
  }

  /** No body (an interim response). */
  static BodyFraming none() {
    return new BodyFraming(Kind.NONE, 0);
  }

  boolean hasBody() {
    return kind == Kind.CHUNKED || (kind == Kind.LENGTH && length > 0);
  }

  /**
   * The framing of a request of {@code version}. HTTP/1.0 has no chunked coding: a 1.0 request with
   * Transfer-Encoding is refused (RFC 9112, 6.1: such a message must be treated as faulty, since a
   * 1.0 hop would read its framing differently).
   */
  static BodyFraming ofRequest(Head head, String version) throws BadMessage {
    List<String> te = head.all("transfer-encoding");
    List<String> cl = head.all("content-length");
    if (!te.isEmpty() && version.equals("HTTP/1.0")) {
      throw new BadMessage(
          "an HTTP/1.0 request cannot carry Transfer-Encoding (RFC 9112, 6.1): send HTTP/1.1,"
              + " or a Content-Length");
    }
    if (!te.isEmpty()) {
      if (!cl.isEmpty()) {
        throw new BadMessage("both Transfer-Encoding and Content-Length are present");
      }
      if (te.size() != 1 || !te.get(0).equalsIgnoreCase("chunked")) {
        throw new BadMessage("only 'Transfer-Encoding: chunked' is supported in requests");
      }
      return new BodyFraming(Kind.CHUNKED, 0);
    }
    if (!cl.isEmpty()) {
      return new BodyFraming(Kind.LENGTH, contentLength(cl));
    }
    return new BodyFraming(Kind.NONE, 0);
  }

  static BodyFraming ofResponse(Head head, String method, int status) throws BadMessage {
    if (method.equals("HEAD") || status == 204 || status == 304) {
      return new BodyFraming(Kind.NONE, 0);
    }
    List<String> te = head.all("transfer-encoding");
    if (!te.isEmpty()) {
      String last = te.get(te.size() - 1);
      int comma = last.lastIndexOf(',');
      String finalCoding = (comma < 0 ? last : last.substring(comma + 1)).trim();
      return finalCoding.equalsIgnoreCase("chunked")
          ? new BodyFraming(Kind.CHUNKED, 0)
          : new BodyFraming(Kind.UNTIL_CLOSE, 0);
    }
    List<String> cl = head.all("content-length");
    if (!cl.isEmpty()) {
      return new BodyFraming(Kind.LENGTH, contentLength(cl));
    }
    return new BodyFraming(Kind.UNTIL_CLOSE, 0);
  }

  private static long contentLength(List<String> values) throws BadMessage {
    String first = null;
    for (String v : values) {
      for (String part : v.split(",", -1)) {
        String p = part.trim();
        if (!p.matches("[0-9]{1,18}")) {
          throw new BadMessage("invalid Content-Length");
        }
        if (first != null && !first.equals(p)) {
          throw new BadMessage("conflicting Content-Length values");
        }
        first = p;
      }
    }
    if (first == null) {
      throw new BadMessage("invalid Content-Length");
    }
    return Long.parseLong(first);
  }

  /**
   * Copies the body from {@code in} to {@code out}, counting the bytes written. When {@code
   * flushEach}, flushes after each write (streaming to the client). Read failures and a premature
   * end are reported as {@link ClientBodyException}.
   */
  void copy(InputStream in, OutputStream out, AtomicLong count, boolean flushEach)
      throws IOException, BadMessage {
    byte[] buf = new byte[BUFFER_SIZE];
    switch (kind) {
      case NONE -> {}
      case LENGTH -> copyExactly(in, out, length, buf, count, flushEach);
      case UNTIL_CLOSE -> {
        int n;
        while ((n = readBody(in, buf, buf.length)) >= 0) {
          out.write(buf, 0, n);
          if (flushEach) {
            out.flush();
          }
          count.addAndGet(n);
        }
      }
      case CHUNKED -> copyChunked(in, out, buf, count, flushEach);
    }
  }

  private static void copyChunked(
      InputStream in, OutputStream out, byte[] buf, AtomicLong count, boolean flushEach)
      throws IOException, BadMessage {
    LineReader reader = new LineReader(in);
    while (true) {
      String sizeLine = readBodyLine(reader, MAX_CHUNK_LINE, "chunk size line");
      int semi = sizeLine.indexOf(';');
      String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).strip();
      if (!hex.matches("[0-9A-Fa-f]{1,15}")) {
        throw new BadMessage("invalid chunk size");
      }
      long size = Long.parseLong(hex, 16);
      writeLine(out, sizeLine, count);
      if (size == 0) {
        long trailerStart = reader.bytes;
        for (int i = 0; ; i++) {
          long remaining = Head.MAX_HEADER_BYTES - (reader.bytes - trailerStart);
          if (i > Head.MAX_HEADERS || remaining <= 0) {
            throw new BadMessage("the chunked trailer is too large");
          }
          String trailer = readBodyLine(reader, (int) remaining, "chunked trailer");
          writeLine(out, trailer, count);
          if (trailer.isEmpty()) {
            out.flush();
            return;
          }
        }
      }
      copyExactly(in, out, size, buf, count, flushEach);
      String end = readBodyLine(reader, 0, "chunk end");
      if (!end.isEmpty()) {
        throw new BadMessage("missing CRLF after a chunk");
      }
      writeLine(out, "", count);
      if (flushEach) {
        out.flush();
      }
    }
  }

  private static String readBodyLine(LineReader reader, int max, String what)
      throws IOException, BadMessage {
    String line;
    try {
      line = reader.read(max, what);
    } catch (IOException e) {
      throw new ClientBodyException("reading the body failed: " + HttpSyntax.describe(e), e);
    }
    if (line == null) {
      throw new ClientBodyException("the body ended early", null);
    }
    return line;
  }

  private static void writeLine(OutputStream out, String line, AtomicLong count)
      throws IOException {
    byte[] b = (line + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
    out.write(b);
    count.addAndGet(b.length);
  }

  private static void copyExactly(
      InputStream in,
      OutputStream out,
      long length,
      byte[] buf,
      AtomicLong count,
      boolean flushEach)
      throws IOException {
    long left = length;
    while (left > 0) {
      int n = readBody(in, buf, (int) Math.min(buf.length, left));
      if (n < 0) {
        throw new ClientBodyException("the body ended " + left + " bytes early", null);
      }
      out.write(buf, 0, n);
      if (flushEach) {
        out.flush();
      }
      count.addAndGet(n);
      left -= n;
    }
  }

  /**
   * Reads up to {@code len} bytes: at least one (blocking), then whatever more is already there, so
   * that one write and one flush carry several TLS records rather than one each.
   */
  private static int readBody(InputStream in, byte[] buf, int len) throws IOException {
    try {
      int n = in.read(buf, 0, len);
      while (n > 0 && n < len && in.available() > 0) {
        int m = in.read(buf, n, Math.min(len - n, in.available()));
        if (m <= 0) {
          break;
        }
        n += m;
      }
      return n;
    } catch (IOException e) {
      throw new ClientBodyException("reading the body failed: " + HttpSyntax.describe(e), e);
    }
  }
}
