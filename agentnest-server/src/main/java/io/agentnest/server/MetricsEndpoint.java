package io.agentnest.server;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Tokens;
import io.agentnest.server.metrics.ServerMetrics;
import io.javalin.http.Context;
import io.javalin.router.Endpoint;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@code GET /metrics}: off unless {@code server.yaml} names the scrape token's variable; then only
 * a request with that token reads it. Metrics name tenants and collectors, so they are not public;
 * the scrape token is its own secret, so a scraper holds no key that could run code. Wrong tokens
 * count against the client's address like wrong API keys.
 */
final class MetricsEndpoint {
  /** The least length of a scrape token: as hard to guess as an API key's secret. */
  static final int MIN_TOKEN = 32;

  private MetricsEndpoint() {}

  /**
   * The scrape token from {@code env}, or null when metrics are off.
   *
   * @throws IllegalArgumentException when the variable is not set or the token is too short
   */
  static @Nullable String token(ServerConfig.Metrics m, Map<String, String> env) {
    String name = m.tokenEnv();
    if (name == null) {
      return null;
    }
    String t = env.get(name);
    if (t == null || t.isBlank()) {
      throw new IllegalArgumentException(
          "metrics.token_env names "
              + name
              + ", which is not set: export it with the token your scraper sends, e.g. "
              + name
              + "=$(openssl rand -hex 32)");
    }
    if (t.strip().length() < MIN_TOKEN) {
      throw new IllegalArgumentException(
          name
              + " holds "
              + t.strip().length()
              + " characters: a scrape token needs at least "
              + MIN_TOKEN
              + ", e.g. $(openssl rand -hex 32)");
    }
    return t.strip();
  }

  static void serve(
      Context ctx, ServerMetrics metrics, @Nullable String token, KeyAuthentication auth) {
    if (token == null) {
      throw new ApiException(
          404,
          ErrorCode.NOT_FOUND,
          "metrics are off on this server",
          "set metrics: {token_env: AGENTNEST_METRICS_TOKEN} in server.yaml and export the"
              + " variable (docs/server.md, Metrics)");
    }
    auth.checkNotFlooding(ctx);
    if (!Tokens.same(Exchange.bearer(ctx), token)) {
      auth.refused(ctx);
      throw new ApiException(
          401,
          ErrorCode.UNAUTHENTICATED,
          "the metrics token is missing or wrong",
          "send Authorization: Bearer <the token in the variable metrics.token_env names>");
    }
    ctx.contentType(ServerMetrics.CONTENT_TYPE);
    ctx.result(metrics.scrape());
  }

  /** The route template a request matched ({@code /v1/sandboxes/{id}}), never its own path. */
  static String route(Context ctx) {
    try {
      Endpoint e = ctx.endpoints().matchedHttpEndpoint();
      return e.path;
    } catch (RuntimeException none) {
      // No endpoint matched (a 404 on an unknown path): one label for all of them.
      return "unmatched";
    }
  }
}
