package io.agentnest.server.audit;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Exchange;
import io.javalin.http.Context;
import io.javalin.http.Handler;

/**
 * Who may read the server-wide audit routes. {@code /v1/audit/verify} re-reads the whole chain,
 * every tenant's records, so its cost grows with the server's history, and its counts ({@code
 * checked}, {@code seq}) move with other tenants' activity; {@code /v1/audit/shipping} counts every
 * tenant's records shipped. Both are the operator's: the admin console (or {@code agentnest audit
 * verify} on the host). A tenant reads its own records through {@code /v1/audit} and {@code
 * /v1/sandboxes/{id}/audit}.
 */
public final class AuditAccess {
  private AuditAccess() {}

  public static void adminOnly(Context ctx, Handler h) throws Exception {
    if (!Exchange.admin(ctx)) {
      throw new ApiException(
          403,
          ErrorCode.FORBIDDEN,
          ctx.path() + " covers every tenant's audit records: it is the operator's",
          "sign in to the web console with an admin key (`agentnest tenant admin-key`), or run"
              + " `agentnest audit verify` on the host; a tenant reads its own records with GET"
              + " /v1/audit");
    }
    h.handle(ctx);
  }
}
