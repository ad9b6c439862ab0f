package io.agentnest.server;

import io.agentnest.server.approvals.ApproverRole;
import io.agentnest.server.console.ConsoleSessions;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.javalin.http.Context;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Who a request is, from the key it brings: a Bearer key on {@code /v1}, {@code X-API-KEY} on the
 * E2B API, a key typed into the console's sign-in. Every face goes through the same checks: refused
 * keys are counted against the client (and slowed down with a 429 past a bound), revoked and
 * expired keys are told apart, and a tenant's requests are rate-limited.
 */
final class KeyAuthentication {
  private final TenantStore tenants;
  private final RateLimiter limiter = new RateLimiter(System::nanoTime);
  private final AuthFailures failedAuth = new AuthFailures();

  KeyAuthentication(TenantStore tenants) {
    this.tenants = tenants;
  }

  /** 429 when the client's address has been refused too often, before any secret is compared. */
  void checkNotFlooding(Context ctx) {
    failedAuth.check(ctx, null);
  }

  /** Counts one request of {@code t} against its rate (429 past it). */
  void acquire(Tenant t) {
    limiter.acquire(t);
  }

  /**
   * The console's sign-in: an admin key, or a tenant key as on the API (rate-limited, refusals
   * counted).
   */
  ConsoleSessions.SignedIn consoleSignIn(String key, Context ctx) {
    failedAuth.check(ctx, key);
    if (tenants.checkAdminKey(key) == null) {
      return new ConsoleSessions.SignedIn(
          ConsoleSessions.ADMIN, TenantStore.keyId(key), KeyRole.AGENT);
    }
    TenantStore.Check c = keyHolder(key, ctx);
    return new ConsoleSessions.SignedIn(
        Objects.requireNonNull(c.tenant()).name(), TenantStore.keyId(key), c.role());
  }

  /** The tenant and role of the request's {@code Authorization: Bearer} key. */
  TenantStore.Check bearer(Context ctx) {
    String key = Exchange.bearer(ctx);
    if (key == null) {
      refused(ctx);
      throw new ApiException(
          401,
          ErrorCode.UNAUTHENTICATED,
          "no API key: the Authorization header is missing or not 'Bearer <key>'",
          "send 'Authorization: Bearer ank_...'; `agentnest tenant add NAME` prints a key");
    }
    return keyHolderUnlimited(key, ctx);
  }

  /** The E2B API's authentication: the same keys, sent as X-API-KEY (or Bearer). */
  Tenant e2bTenant(@Nullable String key, Context ctx) {
    if (key == null || key.isEmpty()) {
      refused(ctx);
      throw new ApiException(
          401,
          ErrorCode.UNAUTHENTICATED,
          "no API key: the X-API-KEY header is missing",
          "set E2B_API_KEY to a tenant key (`agentnest tenant add NAME` prints one)");
    }
    TenantStore.Check c = keyHolder(key, ctx);
    if (c.role() == KeyRole.APPROVER) {
      // E2B's API makes, runs and reads sandboxes: nothing of it is an approver's.
      throw ApproverRole.refused("use the E2B API");
    }
    return Objects.requireNonNull(c.tenant());
  }

  /**
   * The tenant of {@code key} (the console's sign-in, E2B's X-API-KEY), rate-limited; a refused key
   * counts against the client address like a refused Bearer key.
   */
  private TenantStore.Check keyHolder(String key, Context ctx) {
    TenantStore.Check c = keyHolderUnlimited(key, ctx);
    limiter.acquire(Objects.requireNonNull(c.tenant()));
    return c;
  }

  /**
   * The tenant of {@code key} and the key's role (the check's tenant is set), unless refused
   * authentications are over a bound (429).
   */
  private TenantStore.Check keyHolderUnlimited(String key, Context ctx) {
    failedAuth.check(ctx, key);
    try {
      return tenantOfKey(key);
    } catch (ApiException refused) {
      failedAuth.refused(ctx, key);
      throw refused;
    }
  }

  /** Counts a request without a usable key against its client address. */
  void refused(Context ctx) {
    failedAuth.refused(ctx, null);
  }

  /** A sandbox's tenant for a call its access token authorised: still there, rate-limited. */
  Tenant activeTenant(String name) {
    Tenant t =
        tenants
            .find(name)
            .orElseThrow(
                () ->
                    new ApiException(
                        401,
                        ErrorCode.UNAUTHENTICATED,
                        "tenant '" + Escape.id(name) + "' was removed",
                        "ask the operator"));
    limiter.acquire(t);
    return t;
  }

  private TenantStore.Check tenantOfKey(String key) {
    TenantStore.Check check = tenants.authenticate(key);
    if (check.refusal() != null) {
      throw switch (check.refusal()) {
        case REVOKED ->
            new ApiException(
                401,
                ErrorCode.KEY_REVOKED,
                "API key " + check.keyId() + " was revoked",
                "ask the operator for a new key (`agentnest tenant key NAME`)");
        case EXPIRED ->
            new ApiException(
                401,
                ErrorCode.KEY_EXPIRED,
                "API key " + check.keyId() + " has expired",
                "ask the operator for a new key (`agentnest tenant key NAME`)");
        case MALFORMED, UNKNOWN ->
            new ApiException(
                401,
                ErrorCode.UNAUTHENTICATED,
                "the API key is not valid",
                "check AGENTNEST_API_KEY: keys look like ank_<16 hex>_<43 characters>");
      };
    }
    Tenant t = check.tenant();
    if (t == null) {
      throw new ApiException(
          401, ErrorCode.UNAUTHENTICATED, "the key's tenant is gone", "ask the operator");
    }
    return check;
  }
}
