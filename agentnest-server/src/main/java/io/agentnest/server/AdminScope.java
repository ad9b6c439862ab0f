package io.agentnest.server;

import io.agentnest.server.approvals.ApprovalQueue;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Route;
import io.agentnest.server.service.Registry;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.javalin.http.Context;
import java.util.Set;

/** The console's admin on the {@code /v1} routes: what it may do, and as whom it does it. */
final class AdminScope {
  private AdminScope() {}

  /** What the console's admin may do: read every tenant's, answer any question, extend, destroy. */
  static final Set<String> ROUTES =
      Set.of(
          "get /v1/sandboxes",
          "get /v1/sandboxes/{id}",
          "delete /v1/sandboxes/{id}",
          "post /v1/sandboxes/{id}/extend",
          "get /v1/sandboxes/{id}/files",
          "get /v1/sandboxes/{id}/files/content",
          "get /v1/sandboxes/{id}/artifacts",
          "get /v1/sandboxes/{id}/audit",
          "get /v1/approvals",
          "post /v1/approvals/{id}",
          "get /v1/audit/verify",
          "get /v1/audit/shipping");

  /**
   * An admin console session on a /v1 route: a sandbox's route acts as its owner (its policy, its
   * tenant's quotas), found across tenants; the lists and approvals span all tenants. Running code,
   * changing files and making sandboxes stay with tenant keys (403): the admin watches and answers.
   */
  static void enter(Route r, Context ctx, Registry registry, TenantStore tenants) {
    if (!ROUTES.contains(r.key())) {
      throw new ApiException(
          403,
          ErrorCode.FORBIDDEN,
          "the admin console does not " + r.key(),
          "use a tenant's key for that; the admin key reads every tenant and answers approvals");
    }
    ctx.attribute(Exchange.ADMIN, Boolean.TRUE);
    ctx.attribute(ApprovalQueue.PRINCIPAL, "console:admin");
    if (r.path().startsWith("/v1/sandboxes/{id}")) {
      Registry.Entry e = registry.getAny(ctx.pathParam("id"));
      // The owner is checked, not rate-limited: the admin's browsing is not the tenant's traffic.
      Tenant owner =
          tenants
              .find(e.tenant())
              .orElseThrow(
                  () -> ApiException.notFound("sandbox '" + Escape.id(e.sandbox().id()) + "'"));
      ctx.attribute(Exchange.TENANT, owner);
    }
  }
}
