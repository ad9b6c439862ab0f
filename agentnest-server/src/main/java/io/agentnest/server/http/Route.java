package io.agentnest.server.http;

import java.util.List;
import java.util.Locale;

/**
 * Every route the server serves, as data: the server registers exactly these, and a test checks
 * that docs/openapi.yaml names exactly these (same paths, same methods).
 *
 * @param method HTTP method
 * @param path OpenAPI-style path template, e.g. {@code /v1/sandboxes/{id}}
 * @param authenticated whether a Bearer API key is required
 */
public record Route(String method, String path, boolean authenticated) {
  public static final String SANDBOXES = "/v1/sandboxes";
  public static final String SANDBOX = "/v1/sandboxes/{id}";
  public static final String SNAPSHOTS = "/v1/snapshots";

  public static final List<Route> ALL =
      List.of(
          new Route("GET", "/v1/health", false),
          new Route("GET", "/v1/tenant", true),
          new Route("POST", SANDBOXES, true),
          new Route("GET", SANDBOXES, true),
          new Route("GET", SANDBOX, true),
          new Route("DELETE", SANDBOX, true),
          new Route("POST", SANDBOX + "/extend", true),
          new Route("POST", SANDBOX + "/exec", true),
          new Route("POST", SANDBOX + "/code", true),
          new Route("GET", SANDBOX + "/files", true),
          new Route("DELETE", SANDBOX + "/files", true),
          new Route("GET", SANDBOX + "/files/content", true),
          new Route("PUT", SANDBOX + "/files/content", true),
          new Route("POST", SANDBOX + "/files/mkdir", true),
          new Route("GET", SANDBOX + "/archive", true),
          new Route("PUT", SANDBOX + "/archive", true),
          new Route("POST", SANDBOX + "/executions/{execution}/cancel", true),
          new Route("GET", SANDBOX + "/stream", true),
          new Route("POST", SANDBOX + "/fork", true),
          new Route("POST", SANDBOX + "/snapshots", true),
          new Route("GET", SANDBOX + "/artifacts", true),
          new Route("GET", SANDBOX + "/audit", true),
          new Route("GET", "/v1/approvals", true),
          new Route("GET", "/v1/audit", true),
          new Route("GET", "/v1/audit/verify", true),
          new Route("GET", "/v1/audit/shipping", true),
          new Route("POST", "/v1/approvals/{id}", true),
          new Route("GET", SNAPSHOTS, true),
          new Route("DELETE", SNAPSHOTS + "/{name}", true),
          new Route("POST", SNAPSHOTS + "/{name}/restore", true));

  /** {@code get /v1/sandboxes}: how the OpenAPI document keys an operation. */
  public String key() {
    return method.toLowerCase(Locale.ROOT) + " " + path;
  }
}
