package io.agentnest.mcp;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.tools.SandboxTools;
import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sits between the MCP client's stdin and the SDK's stdio transport, which ends the whole server on
 * the first line it cannot take (one over its size limit, or one that is not a JSON-RPC message).
 * Each line is checked here first; a bad one is answered with a JSON-RPC error naming the problem
 * (the id is found by streaming through the line, never holding more than {@link
 * #MAX_MESSAGE_BYTES}) and dropped, and the server keeps serving.
 *
 * <p>Errors are written under the lock the SDK takes on the same output stream, so a line of ours
 * never lands inside one of its messages.
 */
final class StdioMessageGuard extends InputStream {
  /** Largest message accepted on stdio (the SDK's own default limit). */
  static final int MAX_MESSAGE_BYTES = 16 << 20;

  static final int INVALID_REQUEST = -32600;
  static final int PARSE_ERROR = -32700;

  private static final Logger LOG = LoggerFactory.getLogger(StdioMessageGuard.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonFactory FACTORY = JSON.getFactory();

  private final InputStream in;
  private final OutputStream out;
  private final int max;
  private byte[] line = new byte[0];
  private int pos;
  private boolean eof;

  StdioMessageGuard(InputStream in, OutputStream out) {
    this(in, out, MAX_MESSAGE_BYTES);
  }

  StdioMessageGuard(InputStream in, OutputStream out, int maxMessageBytes) {
    this.in = new BufferedInputStream(in, 1 << 16);
    this.out = out;
    this.max = maxMessageBytes;
  }

  @Override
  public int read() throws IOException {
    if (!fill()) {
      return -1;
    }
    return line[pos++] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    if (!fill()) {
      return -1;
    }
    int n = Math.min(len, line.length - pos);
    System.arraycopy(line, pos, b, off, n);
    pos += n;
    return n;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }

  /** Makes sure an accepted line (with its newline) is ready; false at the end of input. */
  private boolean fill() throws IOException {
    while (pos >= line.length) {
      if (eof) {
        return false;
      }
      nextLine();
    }
    return true;
  }

  private void nextLine() throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream(256);
    int b;
    while ((b = in.read()) != -1 && b != '\n') {
      if (buf.size() >= max) {
        buf.write(b);
        oversized(buf.toByteArray());
        return;
      }
      buf.write(b);
    }
    if (b == -1) {
      eof = true;
    }
    byte[] bytes = buf.toByteArray();
    int len = bytes.length;
    if (len > 0 && bytes[len - 1] == '\r') {
      len--;
    }
    if (isBlank(bytes, len)) {
      return;
    }
    Head head = new Head();
    try (JsonParser p = FACTORY.createParser(bytes, 0, len)) {
      head.scan(p, true);
    } catch (IOException | RuntimeException e) {
      String why =
          e instanceof JsonProcessingException j
              ? j.getOriginalMessage()
              : e.getMessage() == null ? e.toString() : e.getMessage();
      // JSON-RPC: a parse error is answered with a null id, whatever was read before it.
      refuse(
          new Head(),
          PARSE_ERROR,
          "Parse error: the line is not one JSON object (" + SandboxTools.bound(why, 200) + ")",
          false);
      return;
    }
    if (head.method == null && !head.response) {
      refuse(
          head,
          INVALID_REQUEST,
          "Invalid Request: a JSON-RPC message needs \"method\" (request, notification) or"
              + " \"result\"/\"error\" with \"id\" (response)",
          false);
      return;
    }
    line = new byte[len + 1];
    for (int i = 0; i < len; i++) {
      // A raw CR can only be whitespace between tokens here (JSON strings cannot hold one), and
      // the SDK would take it for the end of the line.
      line[i] = bytes[i] == '\r' ? (byte) ' ' : bytes[i];
    }
    line[len] = '\n';
    pos = 0;
  }

  /** A line over the limit: stream through the rest of it for its id, then answer and drop it. */
  private void oversized(byte[] prefix) throws IOException {
    UntilNewline rest = new UntilNewline(in);
    Head head = new Head();
    try (JsonParser p =
        FACTORY.createParser(new SequenceInputStream(new ByteArrayInputStream(prefix), rest))) {
      head.scan(p, false);
    } catch (IOException | RuntimeException e) {
      // Keep what was found before the trouble (the id usually comes early).
    }
    rest.drain();
    if (rest.sawEnd) {
      eof = true;
    }
    long size = prefix.length + rest.count;
    String limit = max % (1 << 20) == 0 ? (max >> 20) + " MiB (" + max + " bytes)" : max + " bytes";
    if (head.response || (head.method != null && !head.hasId)) {
      LOG.warn(
          "dropped a {} of {} bytes from the MCP client: over the stdio limit of {}",
          head.response ? "response" : "notification",
          size,
          limit);
      return;
    }
    refuse(
        head,
        INVALID_REQUEST,
        "Request too large: "
            + size
            + " bytes is over the limit of "
            + limit
            + " per message on agentnest's stdio transport; the request was not run. Send less"
            + " per call (e.g. write a large file in parts with write_file, or generate the data"
            + " inside the sandbox).",
        true);
  }

  /** Answers with a JSON-RPC error (requests only; notifications get none) and logs it. */
  private void refuse(Head head, int code, String message, boolean tooLarge) throws IOException {
    LOG.warn("refused a message from the MCP client: {}", message);
    if (head.method != null && !head.hasId) {
      return;
    }
    ObjectNode reply = JSON.createObjectNode();
    reply.put("jsonrpc", "2.0");
    reply.set("id", head.id == null ? NullNode.getInstance() : head.id);
    ObjectNode error = reply.putObject("error").put("code", code).put("message", message);
    if (tooLarge) {
      error.putObject("data").put("limit_bytes", max);
    }
    byte[] bytes = JSON.writeValueAsBytes(reply);
    // The SDK writes each message under this same lock: ours never splits one of its lines.
    synchronized (out) {
      out.write(bytes);
      out.write('\n');
      out.flush();
    }
  }

  private static boolean isBlank(byte[] b, int len) {
    for (int i = 0; i < len; i++) {
      if (b[i] != ' ' && b[i] != '\t' && b[i] != '\r') {
        return false;
      }
    }
    return true;
  }

  /** The top-level fields that matter for an answer; filled as far as the scan got. */
  private static final class Head {
    @Nullable JsonNode id;
    boolean hasId;
    @Nullable String method;
    boolean response;

    /** Reads one top-level object, skipping (not holding) every value but id and method. */
    void scan(JsonParser p, boolean whole) throws IOException {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("a JSON-RPC message is a JSON object");
      }
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        switch (name) {
          case "id" -> {
            hasId = true;
            if (v == JsonToken.VALUE_NUMBER_INT || v == JsonToken.VALUE_STRING) {
              JsonNode node = JSON.readTree(p);
              id = node.isTextual() && node.asText().length() > 200 ? null : node;
            } else {
              p.skipChildren();
            }
          }
          case "method" -> {
            if (v == JsonToken.VALUE_STRING) {
              method = p.getText();
            } else {
              p.skipChildren();
            }
          }
          case "result", "error" -> {
            response = true;
            p.skipChildren();
          }
          default -> p.skipChildren();
        }
      }
      if (t != JsonToken.END_OBJECT) {
        throw new IOException("the JSON object is not complete");
      }
      if (whole && p.nextToken() != null) {
        throw new IOException("more than one JSON value on the line");
      }
    }
  }

  /** The rest of the current line from {@code in}; the newline is consumed, not returned. */
  private static final class UntilNewline extends InputStream {
    private final InputStream in;
    long count;
    boolean done;
    boolean sawEnd;

    UntilNewline(InputStream in) {
      this.in = in;
    }

    @Override
    public int read() throws IOException {
      if (done) {
        return -1;
      }
      int b = in.read();
      if (b == -1 || b == '\n') {
        done = true;
        sawEnd = b == -1;
        return -1;
      }
      count++;
      return b;
    }

    @Override
    public int read(byte[] buf, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      int n = 0;
      while (n < len) {
        int b = read();
        if (b == -1) {
          break;
        }
        buf[off + n++] = (byte) b;
      }
      return n == 0 ? -1 : n;
    }

    void drain() throws IOException {
      while (read() != -1) {
        // skipping the rest of the oversized line
      }
    }
  }
}
