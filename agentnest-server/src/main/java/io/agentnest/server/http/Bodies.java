package io.agentnest.server.http;

import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;

/**
 * Request bodies read within their bound and the server's memory budget, the same way on every
 * face: a body over its bound is refused with 413 naming the bound before it is buffered.
 */
public final class Bodies {
  /**
   * How far over its bound a declared body is still read before the 413 ({@link #declaredOver}).
   */
  private static final long DRAIN_BYTES = 1L << 20;

  private Bodies() {}

  public static byte[] read(Context ctx, long max) {
    refuseDeclaredOver(ctx, max);
    long declared = ctx.req().getContentLengthLong();
    MemoryBudget.reserve(ctx, declared >= 0 ? declared : max, "a request body");
    try (InputStream in = ctx.req().getInputStream()) {
      byte[] data = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, max + 1));
      if (data.length > max) {
        throw tooLarge(data.length, max);
      }
      return data;
    } catch (IOException e) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON, "the body could not be read: " + e.getMessage(), "send again");
    }
  }

  /** A 413 naming the bound when the body declares more than {@code max} bytes. */
  static void refuseDeclaredOver(Context ctx, long max) {
    if (declaredOver(ctx, max)) {
      throw tooLarge(ctx.req().getContentLengthLong(), max);
    }
  }

  /**
   * Whether the body declares more than {@code max} bytes; one not much over the bound is read (and
   * dropped) first, so that the caller's refusal reaches the client: closing with it unread resets
   * the connection while the client still sends, and the client then sees no answer at all. Larger
   * ones are not read.
   */
  public static boolean declaredOver(Context ctx, long max) {
    long declared = ctx.req().getContentLengthLong();
    if (declared <= max) {
      return false;
    }
    if (declared - max <= DRAIN_BYTES) {
      try (InputStream in = ctx.req().getInputStream()) {
        in.skipNBytes(declared);
      } catch (IOException e) {
        // the client went away: nobody reads the answer either
      }
    }
    return true;
  }

  static ApiException tooLarge(long size, long max) {
    return new ApiException(
        413,
        ErrorCode.BODY_TOO_LARGE,
        "the request body is " + (size > max ? "over " : "") + max + " bytes, the server's bound",
        "send at most " + max + " bytes (files: split them; JSON: the server's max_json)",
        Map.of("limit", max));
  }
}
