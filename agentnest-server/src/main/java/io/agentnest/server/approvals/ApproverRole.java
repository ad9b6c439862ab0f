package io.agentnest.server.approvals;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Route;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.Tenant;
import io.javalin.http.Context;
import java.util.Set;

/**
 * The approver role (issue 42, item 18): a tenant key of role {@link KeyRole#APPROVER} lists and
 * answers its tenant's approval questions and reads what a person needs to judge them, nothing
 * else; with {@code policy.approver_role_required} (or the tenant's own setting) on, the tenant's
 * agent keys no longer answer, so the agent that holds an agent key cannot approve what its own
 * sandbox asks.
 */
public final class ApproverRole {
  private ApproverRole() {}

  /** The request attribute holding the role of the key (or the console session's key). */
  public static final String ROLE = "agentnest.keyRole";

  /** The request attribute holding the id of the key that authenticated the request. */
  public static final String KEY_ID = "agentnest.keyId";

  /**
   * What an approver key may do on /v1: the questions and the answers, and the context of a
   * question (which sandboxes the tenant has, what they did: their audit records). No route that
   * makes, runs, changes or reads a sandbox's files or output.
   */
  static final Set<String> ROUTES =
      Set.of(
          "get /v1/tenant",
          "get /v1/sandboxes",
          "get /v1/sandboxes/{id}",
          "get /v1/sandboxes/{id}/audit",
          "get /v1/audit",
          "get /v1/approvals",
          "post /v1/approvals/{id}");

  public static KeyRole role(Context ctx) {
    KeyRole r = ctx.attribute(ROLE);
    return r == null ? KeyRole.AGENT : r;
  }

  /** Refuses a route an approver key may not take (403 naming the agent key). */
  public static void scope(Route r, Context ctx) {
    if (role(ctx) == KeyRole.APPROVER && !ROUTES.contains(r.key())) {
      throw refused(r.key());
    }
  }

  /** The 403 for an approver key outside its routes. */
  public static ApiException refused(String what) {
    return new ApiException(
        403,
        ErrorCode.FORBIDDEN,
        "an approver key lists and answers approvals only; it does not " + what,
        "use one of the tenant's agent keys for that (`agentnest tenant key NAME`)");
  }

  /**
   * Refuses an answer from an agent key when {@code t}'s approvals require an approver: the agent
   * that holds the key is the party the question guards against.
   */
  static void checkMayAnswer(Context ctx, Tenant t, boolean serverRequires) {
    if (role(ctx) == KeyRole.AGENT && (serverRequires || t.approverRoleRequired())) {
      throw new ApiException(
          403,
          ErrorCode.FORBIDDEN,
          "tenant '"
              + Escape.id(t.name())
              + "' requires an approver to answer approval questions ("
              + (serverRequires ? "policy.approver_role_required" : "the tenant's setting")
              + "); an agent key cannot answer them",
          "answer with an approver key: `agentnest tenant key "
              + t.name()
              + " --role approver` mints one (sign in to the console with it, or send it as the"
              + " Bearer key), or use the admin console");
    }
  }

  /** Who answered, as the decision records it: the channel, the tenant and an approver's key. */
  public static String principal(String channel, Tenant t, Context ctx) {
    String keyId = ctx.attribute(KEY_ID);
    return role(ctx) == KeyRole.APPROVER && keyId != null
        ? channel + ":" + t.name() + ":approver:" + keyId
        : channel + ":" + t.name();
  }
}
