package io.agentnest.server.http;

import io.agentnest.server.tenancy.Tenant;
import io.javalin.http.Context;
import org.jspecify.annotations.Nullable;

/**
 * Who an authenticated request is from and how its answer is written: the front door sets the
 * attributes once, and every face (/v1, E2B, the console, approvals, audit) reads them here rather
 * than from another face, so no face has to know where the others live.
 */
public final class Exchange {
  /** The request's tenant, set by the front door once its key or console session is checked. */
  public static final String TENANT = "agentnest.tenant";

  /** Set on a request of the admin console: lists and approvals span every tenant. */
  public static final String ADMIN = "agentnest.admin";

  private Exchange() {}

  public static Tenant tenant(Context ctx) {
    Tenant t = ctx.attribute(TENANT);
    if (t == null) {
      throw new IllegalStateException("route reached without authentication");
    }
    return t;
  }

  public static boolean admin(Context ctx) {
    return Boolean.TRUE.equals(ctx.attribute(ADMIN));
  }

  /**
   * The token of the request's {@code Authorization: Bearer <token>} header (scheme matched without
   * regard to case, the token stripped); null when there is none.
   */
  public static @Nullable String bearer(Context ctx) {
    String h = ctx.header("Authorization");
    return h != null && h.regionMatches(true, 0, "Bearer ", 0, 7) ? h.substring(7).strip() : null;
  }

  /** The request attribute holding the error code of a refused request (for the metrics). */
  public static final String ERROR_CODE = "agentnest.errorCode";

  public static void send(Context ctx, ApiException e) {
    ctx.attribute(ERROR_CODE, e.code().wire());
    if (e.status() == 429 || e.status() == 503) {
      ctx.header("Retry-After", "1");
    }
    if (e.status() == 401) {
      ctx.header("WWW-Authenticate", "Bearer");
    }
    json(ctx, e.status(), Wire.error(e));
  }

  public static void json(Context ctx, int status, Object body) {
    ctx.status(status);
    ctx.contentType("application/json");
    ctx.result(Wire.write(body));
  }
}
