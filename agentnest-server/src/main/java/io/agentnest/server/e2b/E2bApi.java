package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.Sandbox;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.Failures;
import io.agentnest.server.service.Registry;
import io.agentnest.server.service.SandboxService;
import io.agentnest.server.service.SandboxStates;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * E2B's REST API for sandbox lifecycle under {@code /e2b} (point {@code E2B_API_URL} here): create
 * from a template name, list, get, kill, set timeout, connect. A sandbox made here is an ordinary
 * server sandbox of the key's tenant (same quota, policy, audit, approvals, and visible on /v1);
 * what AgentNest cannot honour (open internet, pause, MCP gateway, volumes) is refused with the
 * reason in E2B's error shape, never faked. The sandbox's own services (envd, the code interpreter)
 * are {@link E2bEnvd}'s.
 */
public final class E2bApi {
  private static final Logger LOG = LoggerFactory.getLogger(E2bApi.class);

  static final String PREFIX = "/e2b";

  /** The request attribute holding the id of the API key that authenticated it. */
  static final String KEY_ID = "agentnest.e2b.keyId";

  /** Template names the SDKs use by default; they run the server's default image. */
  static final Set<String> DEFAULT_TEMPLATES =
      Set.of("base", "code-interpreter-v1", "code-interpreter", "default");

  private static final int MAX_LIST = 100;

  /** Authenticates an API key (X-API-KEY or Bearer) and applies the tenant's rate limit. */
  public interface Auth {
    Tenant tenant(@Nullable String key, Context ctx);
  }

  private final ServerConfig config;
  private final Registry registry;
  private final SandboxService api;
  private final SandboxStates states;
  private final E2bSandboxes sandboxes;
  private final Auth auth;
  private final Clock clock;
  private final ScheduledExecutorService timers;
  private final E2bDeadlines deadlines;
  private final ExecutorService pumps;

  public E2bApi(
      ServerConfig config,
      Registry registry,
      SandboxService api,
      SandboxStates states,
      E2bSandboxes sandboxes,
      Auth auth,
      Clock clock,
      ScheduledExecutorService timers,
      ExecutorService pumps) {
    this.config = config;
    this.registry = registry;
    this.api = api;
    this.states = states;
    this.sandboxes = sandboxes;
    this.auth = auth;
    this.clock = clock;
    this.timers = timers;
    this.deadlines = new E2bDeadlines(timers, clock);
    this.pumps = pumps;
    // A kept record is state again only while its tenant's sandbox runs on this server.
    sandboxes.reviveWith(
        r -> {
          try {
            Registry.Entry e = registry.get(r.tenant(), r.sandboxId());
            return E2bSandboxes.State.revived(r, new E2bProcesses(e.sandbox(), pumps));
          } catch (ApiException gone) {
            return null;
          }
        });
  }

  /** Registers the routes, each answering errors in E2B's shape. */
  public void register(BiConsumer<String, Map.Entry<String, Handler>> add) {
    route(add, "POST", "/sandboxes", this::create);
    route(add, "POST", "/v2/sandboxes", this::create);
    route(add, "GET", "/sandboxes", this::list);
    route(add, "GET", "/v2/sandboxes", this::list);
    route(add, "GET", "/sandboxes/{id}", this::get);
    route(add, "DELETE", "/sandboxes/{id}", this::kill);
    route(add, "POST", "/sandboxes/{id}/timeout", this::timeout);
    route(add, "POST", "/sandboxes/{id}/refreshes", this::refresh);
    route(add, "POST", "/sandboxes/{id}/connect", this::connect);
    route(add, "POST", "/v2/sandboxes/{id}/connect", this::connect);
    route(add, "POST", "/sandboxes/{id}/pause", this::pause);
    route(add, "POST", "/sandboxes/{id}/resume", this::resumeRoute);
    route(add, "POST", "/sandboxes/{id}/fork", this::fork);
    route(
        add,
        "GET",
        "/sandboxes/{id}/metrics",
        refuse(501, "sandbox metrics are not served: see `agentnest ls` and the audit log"));
    route(
        add,
        "PUT",
        "/sandboxes/{id}/network",
        refuse(
            409,
            "network rules cannot change on a running sandbox: create it with network.allowOut"));
    route(
        add,
        "POST",
        "/sandboxes/{id}/snapshots",
        refuse(501, "use POST /v1/sandboxes/{id}/snapshots for AgentNest snapshots"));
    route(add, "GET", "/snapshots", refuse(501, "use GET /v1/snapshots for AgentNest snapshots"));
    route(
        add,
        "POST",
        "/v3/templates",
        refuse(
            501,
            "templates are not built here: build an image (`agentnest image build`), list it"
                + " under policy.images in server.yaml and use its name as the template"));
  }

  private void route(
      BiConsumer<String, Map.Entry<String, Handler>> add,
      String method,
      String path,
      RestHandler h) {
    add.accept(method, Map.entry(PREFIX + path, ctx -> handle(ctx, h)));
  }

  @FunctionalInterface
  interface RestHandler {
    void handle(Context ctx, Tenant t) throws IOException;
  }

  private static RestHandler refuse(int status, String why) {
    return (ctx, t) -> {
      throw new ApiException(status, ErrorCode.POLICY, why, "");
    };
  }

  private void handle(Context ctx, RestHandler h) {
    try {
      String key = ctx.header("X-API-KEY");
      if (key == null) {
        key = Exchange.bearer(ctx);
      }
      Tenant t = auth.tenant(key, ctx);
      if (key != null) {
        // The key authenticated, so it is well-formed: the access tokens handed out on this
        // request are bound to it (E2bSandboxes.Grant).
        ctx.attribute(KEY_ID, TenantStore.keyId(key));
      }
      h.handle(ctx, t);
    } catch (ApiException e) {
      sendError(ctx, e);
    } catch (RuntimeException | IOException e) {
      ApiException mapped =
          e instanceof RuntimeException r
              ? Failures.of(r)
              : Failures.of(new IllegalStateException(e.getMessage(), e));
      if (mapped.status() >= 500) {
        LOG.warn("{} {} failed", ctx.method(), ctx.path(), e);
      }
      sendError(ctx, mapped);
    }
  }

  static void sendError(Context ctx, ApiException e) {
    if (e.status() == 429) {
      ctx.header("Retry-After", "1");
    }
    String fix = e.fix();
    Exchange.json(
        ctx,
        e.status(),
        E2bWire.restError(e.status(), e.getMessage() + (fix.isEmpty() ? "" : " (" + fix + ")")));
  }

  private ObjectNode body(Context ctx) {
    byte[] b = Bodies.read(ctx, config.maxJsonBytes());
    JsonNode n;
    try {
      n = Wire.JSON.readTree(b.length == 0 ? "{}".getBytes(StandardCharsets.UTF_8) : b);
    } catch (IOException e) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON,
          "the body is not valid JSON: " + e.getMessage(),
          "send a JSON object");
    }
    if (n == null || !n.isObject()) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON, "the body is not a JSON object", "send a JSON object");
    }
    return (ObjectNode) n;
  }

  private void create(Context ctx, Tenant t) {
    ObjectNode req = body(ctx);
    String template = req.path("templateID").asText("");
    if (template.isEmpty()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, "templateID is missing", "send e.g. {\"templateID\": \"base\"}");
    }
    String image = image(template);
    E2bRequests.refuseUnsupported(req);
    Long ttl = null;
    if (req.hasNonNull("timeout")) {
      long s = req.get("timeout").asLong(-1);
      if (s <= 0) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "timeout must be a positive number of seconds",
            "send e.g. {\"timeout\": 300}");
      }
      ttl = s;
    }
    Map<String, String> metadata = E2bRequests.metadata(req);
    Map<String, String> env = E2bRequests.strings(req, "envVars");
    List<String> hosts = E2bRequests.allowOut(req);
    Wire.CreateSandbox create =
        Wire.CreateSandbox.basic(
            image,
            ttl,
            env.isEmpty() ? null : env,
            hosts.isEmpty() ? null : hosts,
            E2bRequests.approvals(metadata));
    sandboxes.retainRegistered(registry);
    Registry.Entry e = api.create(t, create);
    Sandbox sb = e.sandbox();
    E2bSandboxes.State s =
        new E2bSandboxes.State(
            sb.id(), t.name(), template, metadata, e.created(), new E2bProcesses(sb, pumps));
    sandboxes.put(s);
    Exchange.json(ctx, 201, sandbox(ctx, s));
  }

  private String image(String template) {
    if (DEFAULT_TEMPLATES.contains(template)) {
      return config.policy().defaultImage();
    }
    for (String img : config.policy().images()) {
      if (img.equals(template) || img.equals(template + ":latest")) {
        return img;
      }
    }
    throw new ApiException(
        404,
        ErrorCode.NOT_FOUND,
        "template '" + Escape.id(template) + "' not found",
        "use 'base' or 'code-interpreter-v1' (the server's default image "
            + config.policy().defaultImage()
            + ") or an image listed under policy.images in server.yaml: "
            + config.policy().images());
  }

  private E2bSandboxes.State state(Tenant t, String id) {
    E2bSandboxes.State s = sandboxes.get(id);
    if (s != null) {
      if (!s.tenant.equals(t.name())) {
        throw notFound(id);
      }
      if (s.paused() || registry.contains(s.sandboxId)) {
        return s;
      }
      // Gone (killed through /v1, expired): its E2B state goes too.
      sandboxes.remove(id);
      throw notFound(id);
    }
    Registry.Entry e;
    try {
      e = registry.get(t.name(), id);
    } catch (ApiException notFound) {
      throw notFound(id);
    }
    return sandboxes.putIfAbsent(
        new E2bSandboxes.State(
            id, t.name(), e.image(), Map.of(), e.created(), new E2bProcesses(e.sandbox(), pumps)));
  }

  /** The running sandbox behind {@code s}; a paused one is a 409 saying how to resume it. */
  private Registry.Entry running(E2bSandboxes.State s) {
    if (s.paused()) {
      throw new ApiException(
          409,
          ErrorCode.POLICY,
          "sandbox " + Escape.id(s.id) + " is paused",
          "resume it with Sandbox.connect(id)");
    }
    try {
      return registry.get(s.tenant, s.sandboxId);
    } catch (ApiException gone) {
      sandboxes.remove(s.id);
      throw notFound(s.id);
    }
  }

  private static ApiException notFound(String id) {
    return new ApiException(
        404, ErrorCode.NOT_FOUND, "sandbox " + Escape.id(id) + " not found", "");
  }

  private void list(Context ctx, Tenant t) {
    Map<String, String> wanted = E2bRequests.metadataQuery(ctx.queryParam("metadata"));
    String state = ctx.queryParam("state");
    boolean running = state == null || state.isEmpty() || state.contains("running");
    boolean paused = state == null || state.isEmpty() || state.contains("paused");
    int limit = MAX_LIST;
    String l = ctx.queryParam("limit");
    if (l != null) {
      try {
        limit = Math.max(1, Math.min(MAX_LIST, Integer.parseInt(l)));
      } catch (NumberFormatException e) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD, "limit '" + Escape.id(l) + "' is not a number", "send 1-100");
      }
    }
    int offset = 0;
    String token = ctx.queryParam("nextToken");
    if (token != null && !token.isEmpty()) {
      try {
        offset = Math.max(0, Integer.parseInt(token));
      } catch (NumberFormatException e) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "nextToken '" + Escape.id(token) + "' is not one this server gave",
            "pass the x-next-token of the previous page");
      }
    }
    List<Map<String, Object>> all = new ArrayList<>();
    for (Registry.Entry e : registry.list(t.name())) {
      E2bSandboxes.State s = sandboxes.byRunning(e.sandbox().id());
      if (s == null) {
        s = state(t, e.sandbox().id());
      }
      if (running && s.metadata.entrySet().containsAll(wanted.entrySet())) {
        all.add(info(s, e));
      }
    }
    for (E2bSandboxes.State s : sandboxes.ofTenant(t.name())) {
      if (paused && s.paused() && s.metadata.entrySet().containsAll(wanted.entrySet())) {
        all.add(info(s, null));
      }
    }
    int end = Math.min(all.size(), offset + limit);
    List<Map<String, Object>> page = offset >= all.size() ? List.of() : all.subList(offset, end);
    if (end < all.size()) {
      ctx.header("x-next-token", Integer.toString(end));
    }
    Exchange.json(ctx, 200, page);
  }

  private void get(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    Map<String, Object> m = info(s, s.paused() ? null : running(s));
    tokens(ctx, s, m);
    m.put("domain", null);
    Exchange.json(ctx, 200, m);
  }

  private void kill(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    sandboxes.remove(s.id);
    deadlines.cancel(s.id);
    String snapshot = s.pausedAs;
    if (snapshot != null) {
      states.delete(t, snapshot);
    } else {
      registry.remove(s.sandboxId);
    }
    ctx.status(204);
  }

  /** E2B's setTimeout: the sandbox ends {@code timeout} seconds from now, sooner or later. */
  private void timeout(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    setTimeout(t, s, E2bRequests.seconds(body(ctx), "timeout"));
    ctx.status(204);
  }

  private void refresh(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    ObjectNode req = body(ctx);
    setTimeout(t, s, req.hasNonNull("duration") ? E2bRequests.seconds(req, "duration") : 60);
    ctx.status(204);
  }

  private void setTimeout(Tenant t, E2bSandboxes.State s, long seconds) {
    Registry.Entry e = running(s);
    Instant want = clock.instant().plusSeconds(seconds);
    Instant now = e.sandbox().expiresAt();
    deadlines.cancel(s.id);
    if (want.isAfter(now)) {
      api.extend(t, e, Duration.between(now, want).toSeconds() + 1);
    } else {
      // Sooner than its TTL: the server ends it then (a TTL is only ever extended).
      long delay = Math.max(0, Duration.between(clock.instant(), want).toMillis());
      deadlines.schedule(
          s.id,
          delay,
          () -> {
            sandboxes.remove(s.id);
            registry.remove(s.sandboxId);
          });
    }
  }

  /**
   * E2B's pause, mapped onto a snapshot: the workspace and the Python sessions are saved as the
   * tenant's snapshot {@code e2b-pause-...}, the sandbox is destroyed (it stops counting against
   * the quota), and {@code connect} restores it under the same E2B id.
   */
  private void pause(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    synchronized (s) {
      if (s.paused()) {
        throw new ApiException(
            409, ErrorCode.POLICY, "sandbox " + Escape.id(s.id) + " is already paused", "");
      }
      Registry.Entry e = running(s);
      s.processes.cancelAll();
      String name = "e2b-pause-" + shortId(s.id);
      states.save(t, e, name, true);
      deadlines.cancel(s.id);
      s.pausedAs = name;
      sandboxes.unkeep(s);
      registry.remove(e.sandbox().id());
    }
    ctx.status(204);
  }

  private static String shortId(String id) {
    String clean = id.replaceAll("[^A-Za-z0-9]", "");
    return clean.length() > 24 ? clean.substring(0, 24) : clean;
  }

  private void connect(Context ctx, Tenant t) {
    ObjectNode req = body(ctx);
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    boolean resumed = resume(t, s);
    if (req.hasNonNull("timeout")) {
      long seconds = E2bRequests.seconds(req, "timeout");
      if (clock
          .instant()
          .plusSeconds(seconds)
          .isAfter(deadlines.endAt(s.id, running(s).sandbox().expiresAt()))) {
        setTimeout(t, s, seconds);
      }
    }
    Exchange.json(ctx, resumed ? 201 : 200, sandbox(ctx, s));
  }

  private void resumeRoute(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    if (!resume(t, s)) {
      throw new ApiException(
          409, ErrorCode.POLICY, "sandbox " + Escape.id(s.id) + " is not paused", "");
    }
    Exchange.json(ctx, 201, sandbox(ctx, s));
  }

  /** Restores a paused sandbox from its snapshot; false when it was running. */
  private boolean resume(Tenant t, E2bSandboxes.State s) {
    synchronized (s) {
      String name = s.pausedAs;
      if (name == null) {
        return false;
      }
      Registry.Entry e;
      // Its restored copy takes its place in the sandboxes quota (Registry.countHeld).
      s.resuming = true;
      try {
        e = states.restore(t, name);
      } catch (RuntimeException failed) {
        s.resuming = false;
        throw failed;
      }
      s.sandboxId = e.sandbox().id();
      s.processes = new E2bProcesses(e.sandbox(), pumps);
      s.pausedAs = null;
      s.resuming = false;
      states.delete(t, name);
      sandboxes.save(s);
      return true;
    }
  }

  /** E2B's fork: {@code count} independent copies (workspace and Python state), each a sandbox. */
  private void fork(Context ctx, Tenant t) {
    E2bSandboxes.State s = state(t, ctx.pathParam("id"));
    ObjectNode req = body(ctx);
    int count = req.path("count").asInt(1);
    if (count < 1 || count > 8) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, "count must be 1 to 8, got " + count, "fork fewer at a time");
    }
    Registry.Entry parent = running(s);
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      Map<String, Object> result = new LinkedHashMap<>();
      try {
        Registry.Entry copy = states.fork(t, parent);
        E2bSandboxes.State cs =
            new E2bSandboxes.State(
                copy.sandbox().id(),
                t.name(),
                s.templateId,
                s.metadata,
                copy.created(),
                new E2bProcesses(copy.sandbox(), pumps));
        sandboxes.put(cs);
        result.put("sandbox", sandbox(ctx, cs));
      } catch (ApiException e) {
        result.put("error", E2bWire.restError(e.status(), String.valueOf(e.getMessage())));
      }
      out.add(result);
    }
    Exchange.json(ctx, 200, out);
  }

  /** Puts the access tokens handed to this request's key into {@code m}. */
  private void tokens(Context ctx, E2bSandboxes.State s, Map<String, Object> m) {
    String keyId = ctx.attribute(KEY_ID);
    if (keyId == null) {
      throw new IllegalStateException("E2B route reached without a key");
    }
    E2bSandboxes.Grant g = sandboxes.issue(s, keyId);
    m.put("envdAccessToken", g.envdToken());
    m.put("trafficAccessToken", g.trafficToken());
  }

  private Map<String, Object> sandbox(Context ctx, E2bSandboxes.State s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("templateID", s.templateId);
    m.put("sandboxID", s.id);
    m.put("clientID", "agentnest");
    m.put("envdVersion", E2bSandboxes.ENVD_VERSION);
    tokens(ctx, s, m);
    m.put("domain", null);
    return m;
  }

  private Map<String, Object> info(E2bSandboxes.State s, Registry.@Nullable Entry e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("templateID", s.templateId);
    m.put("sandboxID", s.id);
    m.put("clientID", "agentnest");
    m.put("startedAt", s.started.toString());
    m.put(
        "endAt",
        (e == null ? clock.instant() : deadlines.endAt(s.id, e.sandbox().expiresAt())).toString());
    m.put("cpuCount", e == null ? 1 : Math.max(1, (int) Math.ceil(e.cpus())));
    m.put("memoryMB", e == null ? 0 : e.memoryBytes() >> 20);
    m.put("diskSizeMB", 0);
    m.put("metadata", s.metadata);
    m.put("state", e == null ? "paused" : "running");
    m.put("envdVersion", E2bSandboxes.ENVD_VERSION);
    return m;
  }

  public void close() {
    deadlines.close();
  }
}
