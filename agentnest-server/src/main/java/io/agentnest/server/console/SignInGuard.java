package io.agentnest.server.console;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.javalin.http.Context;
import java.net.URI;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Login CSRF: the console's sign-in switches the browser's session to whoever's key the body holds,
 * so another site's page must not be able to post it. A cross-site HTML form can only send {@code
 * text/plain}, {@code application/x-www-form-urlencoded} or {@code multipart/form-data} without a
 * CORS preflight (which this server never grants), so requiring {@code application/json} closes the
 * form; the Fetch metadata and Origin headers, which browsers set and pages cannot forge, refuse a
 * cross-site {@code fetch} as well. Checked before the body is read.
 */
final class SignInGuard {
  private SignInGuard() {}

  static void check(Context ctx) {
    String site = ctx.header("Sec-Fetch-Site");
    if (site != null) {
      String s = site.strip().toLowerCase(Locale.ROOT);
      if (!s.equals("same-origin") && !s.equals("none")) {
        throw crossSite("Sec-Fetch-Site is '" + Escape.id(site) + "'");
      }
    }
    String origin = ctx.header("Origin");
    // Behind a TLS-terminating proxy the browser's host is the proxy's, which it forwards; a page
    // cannot make a browser send X-Forwarded-Host across sites (no form can, and a fetch with it
    // needs a preflight this server never grants).
    if (origin != null
        && !sameOrigin(origin, ctx.header("Host"))
        && !sameOrigin(origin, ctx.header("X-Forwarded-Host"))) {
      throw crossSite("Origin '" + Escape.id(origin) + "' is not this server");
    }
    String type = ctx.header("Content-Type");
    String media = type == null ? "" : type.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
    if (!media.equals("application/json")) {
      throw new ApiException(
          415,
          ErrorCode.UNSUPPORTED_MEDIA_TYPE,
          "sign-in takes Content-Type application/json, got "
              + (type == null ? "none" : "'" + Escape.id(type) + "'"),
          "send {\"key\": \"ank_...\"} with Content-Type: application/json (the console page"
              + " does); forms are refused so that another site cannot sign a browser in");
    }
  }

  private static boolean sameOrigin(String origin, @Nullable String host) {
    if (host == null || origin.equals("null")) {
      return false;
    }
    try {
      URI u = URI.create(origin.strip());
      String authority = u.getRawAuthority();
      return authority != null && authority.equalsIgnoreCase(host.strip());
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static ApiException crossSite(String why) {
    return new ApiException(
        403,
        ErrorCode.CSRF,
        "sign-in from another site is refused: " + why,
        "sign in from the console page this server serves (/console/)");
  }
}
