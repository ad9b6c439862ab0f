package io.agentnest.internal.egress;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** The start line and headers of an HTTP/1.1 message, read within fixed bounds. */
final class Head {
  static final int MAX_HEADER_BYTES = 64 * 1024;
  static final int MAX_HEADERS = 100;

  final String startLine;
  final List<HeaderField> headers;

  private Head(String startLine, List<HeaderField> headers) {
    this.startLine = startLine;
    this.headers = headers;
  }

  /** Null when the stream ends before the message starts. */
  static @Nullable Head read(LineReader reader, int maxStartLine, String what)
      throws IOException, BadMessage {
    String start = reader.read(maxStartLine, what + " line");
    // Tolerate a few empty lines before the message (RFC 9112, 2.2).
    for (int i = 0; start != null && start.isEmpty() && i < 4; i++) {
      start = reader.read(maxStartLine, what + " line");
    }
    if (start == null) {
      return null;
    }
    if (start.isEmpty()) {
      throw new BadMessage("the " + what + " starts with empty lines");
    }
    List<HeaderField> headers = new ArrayList<>();
    long budgetStart = reader.bytes;
    while (true) {
      long used = reader.bytes - budgetStart;
      int remaining = (int) Math.max(0, MAX_HEADER_BYTES - used);
      if (remaining == 0) {
        throw new BadMessage("the " + what + " headers exceed " + MAX_HEADER_BYTES + " bytes");
      }
      String line = reader.read(remaining, what + " headers (at most " + MAX_HEADER_BYTES + ")");
      if (line == null) {
        throw new BadMessage("the " + what + " ends before the end of its headers");
      }
      if (line.isEmpty()) {
        return new Head(start, headers);
      }
      if (headers.size() >= MAX_HEADERS) {
        throw new BadMessage("the " + what + " has more than " + MAX_HEADERS + " headers");
      }
      char first = line.charAt(0);
      if (first == ' ' || first == '\t') {
        throw new BadMessage("folded header lines are not allowed");
      }
      int colon = line.indexOf(':');
      if (colon <= 0) {
        throw new BadMessage("malformed header line (no 'name: value')");
      }
      String name = line.substring(0, colon);
      if (!HttpSyntax.isToken(name)) {
        throw new BadMessage("malformed header name");
      }
      headers.add(new HeaderField(name, line.substring(colon + 1).strip()));
    }
  }

  List<String> all(String lowerName) {
    List<String> out = new ArrayList<>(1);
    for (HeaderField h : headers) {
      if (h.lowerName.equals(lowerName)) {
        out.add(h.value);
      }
    }
    return out;
  }
}
