package io.agentnest.server;

import io.agentnest.server.http.ApiException;
import io.javalin.http.Context;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Bounds on refused authentications (issue 42, LOW 18): per client address as before, and also per
 * key id (the public {@code ank_<id>_} prefix, so guesses at one key's secret from many addresses
 * are bounded) and for the whole server (a spray from many addresses). An address whose bucket is
 * empty is refused (429) before its next key is even looked at; the key-id and server buckets
 * answer refused attempts 429 instead of 401 but never stop a valid key, so nobody can lock a
 * tenant (or every tenant) out by failing on purpose.
 */
final class AuthFailures {
  /** Refused authentications per second one client address may make before it gets 429. */
  static final int PER_ADDRESS = 20;

  /** Refused authentications per second against one key id, from anywhere. */
  static final int PER_KEY_ID = 5;

  /** Refused authentications per second the whole server takes. */
  static final int GLOBAL = 200;

  private static final Pattern KEY_ID = Pattern.compile("ank_([0-9a-f]{16})_");
  private static final String QUOTA = "failed_authentications";

  private final RateLimiter buckets;

  AuthFailures() {
    this(System::nanoTime);
  }

  AuthFailures(LongSupplier nanos) {
    this.buckets = new RateLimiter(nanos);
  }

  /**
   * Before a key is checked: 429 when the client address's bucket is empty. (Not the key id's or
   * the server's: failing on purpose would then lock out every valid key.)
   */
  void check(Context ctx, @Nullable String key) {
    buckets.check(address(ctx), PER_ADDRESS, QUOTA);
  }

  /** After a refusal: counts it in every bucket it belongs to (429 when one is now empty). */
  void refused(Context ctx, @Nullable String key) {
    String id = keyId(key);
    ApiException full = null;
    for (String[] b :
        new String[][] {
          {address(ctx), String.valueOf(PER_ADDRESS), QUOTA},
          {id, String.valueOf(PER_KEY_ID), QUOTA + "_per_key"},
          {"global", String.valueOf(GLOBAL), QUOTA + "_server"}
        }) {
      if (b[0] == null) {
        continue;
      }
      try {
        buckets.acquire(b[0], Integer.parseInt(b[1]), b[2]);
      } catch (ApiException e) {
        if (full == null) {
          full = e;
        }
      }
    }
    if (full != null) {
      throw full;
    }
  }

  private static String address(Context ctx) {
    return "addr:" + ctx.req().getRemoteAddr();
  }

  private static @Nullable String keyId(@Nullable String key) {
    if (key == null) {
      return null;
    }
    Matcher m = KEY_ID.matcher(key);
    return m.lookingAt() ? "key:" + m.group(1) : null;
  }
}
