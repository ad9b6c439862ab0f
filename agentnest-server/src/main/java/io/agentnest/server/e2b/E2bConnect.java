package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Wire;
import io.javalin.http.Context;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The Connect RPC protocol (connectrpc.com/docs/protocol) in its JSON codec, as the E2B SDKs speak
 * it to a sandbox's envd: unary calls are a JSON body answered by a JSON body or an error with an
 * HTTP status; server-streaming calls carry enveloped messages ({@code flags(1) | length u32 BE |
 * JSON}) both ways and end with an end-of-stream envelope that holds the error, if any. Every
 * length a client sends is bounded before anything is allocated.
 */
final class E2bConnect {
  static final String UNARY_JSON = "application/json";
  static final String STREAM_JSON = "application/connect+json";
  private static final int FLAG_COMPRESSED = 0x01;
  private static final int FLAG_END_STREAM = 0x02;

  private E2bConnect() {}

  /** Connect's error codes with the HTTP status a unary error carries. */
  enum Code {
    CANCELED(499),
    UNKNOWN(500),
    INVALID_ARGUMENT(400),
    DEADLINE_EXCEEDED(504),
    NOT_FOUND(404),
    ALREADY_EXISTS(409),
    PERMISSION_DENIED(403),
    RESOURCE_EXHAUSTED(429),
    FAILED_PRECONDITION(400),
    ABORTED(409),
    OUT_OF_RANGE(400),
    UNIMPLEMENTED(501),
    INTERNAL(500),
    UNAVAILABLE(503),
    DATA_LOSS(500),
    UNAUTHENTICATED(401);

    final int httpStatus;

    Code(int httpStatus) {
      this.httpStatus = httpStatus;
    }

    String wire() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** A call refused or failed with a Connect error code; the message says what to do. */
  static final class RpcException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final Code code;

    RpcException(Code code, String message) {
      super(message);
      this.code = code;
    }
  }

  static RpcException error(Code code, String message) {
    return new RpcException(code, message);
  }

  /** Maps an API error (quota, policy, path, missing sandbox) onto the nearest Connect code. */
  static RpcException fromApi(ApiException e) {
    Code c =
        switch (e.status()) {
          case 400, 413, 422 -> e.status() == 413 ? Code.RESOURCE_EXHAUSTED : Code.INVALID_ARGUMENT;
          case 401 -> Code.UNAUTHENTICATED;
          case 403 -> Code.PERMISSION_DENIED;
          case 404 -> Code.NOT_FOUND;
          case 409 -> Code.ALREADY_EXISTS;
          case 429 -> Code.RESOURCE_EXHAUSTED;
          case 502, 503 -> Code.UNAVAILABLE;
          default -> Code.INTERNAL;
        };
    String fix = e.fix();
    return new RpcException(c, e.getMessage() + (fix.isEmpty() ? "" : " (" + fix + ")"));
  }

  /** Reads a unary request: a JSON object of at most {@code max} bytes. */
  static ObjectNode readUnary(Context ctx, long max) {
    requireType(
        ctx,
        UNARY_JSON,
        ": this server speaks Connect with JSON (the E2B SDK's default), send application/json");
    return object(Bodies.read(ctx, max));
  }

  /**
   * Reads the one enveloped message a server-streaming request carries. A compressed envelope, a
   * second message, a length over {@code max} or a body that ends early is refused.
   */
  static ObjectNode readStreamRequest(Context ctx, long max) {
    requireType(ctx, STREAM_JSON, " for a streaming call: send application/connect+json");
    try (InputStream raw = ctx.req().getInputStream()) {
      DataInputStream in = new DataInputStream(raw);
      int flags;
      long len;
      try {
        flags = in.readUnsignedByte();
        len = Integer.toUnsignedLong(in.readInt());
      } catch (EOFException e) {
        throw error(Code.INVALID_ARGUMENT, "the request ended inside a Connect envelope header");
      }
      if ((flags & FLAG_COMPRESSED) != 0) {
        throw error(
            Code.INVALID_ARGUMENT,
            "compressed envelopes are not accepted: send the message uncompressed");
      }
      if ((flags & ~FLAG_COMPRESSED) != 0) {
        throw error(
            Code.INVALID_ARGUMENT,
            String.format(Locale.ROOT, "envelope flags 0x%02x are not valid in a request", flags));
      }
      if (len > max) {
        throw error(
            Code.RESOURCE_EXHAUSTED,
            "the request message is " + len + " bytes, over the server's bound of " + max);
      }
      byte[] msg = new byte[(int) len];
      try {
        in.readFully(msg);
      } catch (EOFException e) {
        throw error(
            Code.INVALID_ARGUMENT,
            "the request ended inside a Connect envelope: " + len + " bytes were announced");
      }
      if (in.read() >= 0) {
        throw error(
            Code.INVALID_ARGUMENT,
            "a server-streaming call takes exactly one request message, more were sent");
      }
      return object(msg);
    } catch (IOException e) {
      throw error(Code.INVALID_ARGUMENT, "the request could not be read: " + e.getMessage());
    }
  }

  /** Refuses a request whose content type is not {@code expected}; {@code why} ends the message. */
  private static void requireType(Context ctx, String expected, String why) {
    String type = contentType(ctx);
    if (!expected.equals(type)) {
      throw error(
          Code.INVALID_ARGUMENT, "content type '" + Escape.id(type) + "' is not served" + why);
    }
  }

  private static String contentType(Context ctx) {
    String t = ctx.header("Content-Type");
    if (t == null) {
      return "";
    }
    int semi = t.indexOf(';');
    return (semi < 0 ? t : t.substring(0, semi)).strip().toLowerCase(Locale.ROOT);
  }

  private static ObjectNode object(byte[] body) {
    JsonNode n;
    try {
      n = Wire.JSON.readTree(body.length == 0 ? "{}".getBytes() : body);
    } catch (IOException e) {
      throw error(
          Code.INVALID_ARGUMENT, "the request message is not valid JSON: " + e.getMessage());
    }
    if (n == null || !n.isObject()) {
      throw error(Code.INVALID_ARGUMENT, "the request message is not a JSON object");
    }
    return (ObjectNode) n;
  }

  /** Answers a unary call. */
  static void unary(Context ctx, Object message) {
    ctx.status(200);
    ctx.contentType(UNARY_JSON);
    ctx.result(Wire.write(message));
  }

  /** Answers a unary call with an error. */
  static void unaryError(Context ctx, RpcException e) {
    ctx.status(e.code.httpStatus);
    ctx.contentType(UNARY_JSON);
    ObjectNode body = Wire.JSON.createObjectNode();
    body.put("code", e.code.wire());
    body.put("message", String.valueOf(e.getMessage()));
    ctx.result(Wire.write(body));
  }

  /** The response side of a server-streaming call: messages, then exactly one end of stream. */
  static final class Stream {
    private final OutputStream out;
    private boolean ended;

    Stream(Context ctx) throws IOException {
      ctx.status(200);
      ctx.contentType(STREAM_JSON);
      ctx.header("Cache-Control", "no-store");
      this.out = ctx.res().getOutputStream();
    }

    synchronized void send(Object message) throws IOException {
      if (ended) {
        return;
      }
      write(0, Wire.write(message));
    }

    synchronized void end(@Nullable RpcException error) throws IOException {
      if (ended) {
        return;
      }
      ended = true;
      ObjectNode end = Wire.JSON.createObjectNode();
      if (error != null) {
        ObjectNode e = end.putObject("error");
        e.put("code", error.code.wire());
        e.put("message", String.valueOf(error.getMessage()));
      }
      write(FLAG_END_STREAM, Wire.write(end));
    }

    private void write(int flags, byte[] json) throws IOException {
      ByteBuffer head = ByteBuffer.allocate(5);
      head.put((byte) flags).putInt(json.length);
      out.write(head.array());
      out.write(json);
      out.flush();
    }
  }
}
