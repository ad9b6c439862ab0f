package io.agentnest.server;

import io.agentnest.ApprovalPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.server.approvals.ApprovalQueue;
import io.agentnest.server.approvals.ApproverRole;
import io.agentnest.server.audit.AuditAccess;
import io.agentnest.server.audit.AuditShipping;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.console.ConsoleApi;
import io.agentnest.server.console.ConsoleSessions;
import io.agentnest.server.e2b.E2bApi;
import io.agentnest.server.e2b.E2bCodeInterpreter;
import io.agentnest.server.e2b.E2bEnvd;
import io.agentnest.server.e2b.E2bSandboxes;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.MemoryBudget;
import io.agentnest.server.http.OpenStreams;
import io.agentnest.server.http.Route;
import io.agentnest.server.http.StreamThreads;
import io.agentnest.server.metrics.ServerMetrics;
import io.agentnest.server.service.Adoption;
import io.agentnest.server.service.ApprovalFloor;
import io.agentnest.server.service.Failures;
import io.agentnest.server.service.OwnerRecords;
import io.agentnest.server.service.Registry;
import io.agentnest.server.service.SandboxService;
import io.agentnest.server.service.SandboxStates;
import io.agentnest.server.store.SharedStore;
import io.agentnest.server.tenancy.StoreUnavailableException;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.agentnest.server.v1.ExecSocket;
import io.agentnest.server.v1.SandboxApi;
import io.agentnest.server.v1.StateApi;
import io.agentnest.spi.support.DaemonThreads;
import io.javalin.Javalin;
import io.javalin.config.SizeUnit;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import io.javalin.http.HandlerType;
import io.javalin.http.HttpResponseException;
import io.javalin.websocket.WsHandlerType;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.unixdomain.server.UnixDomainServerConnector;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code agentnest serve}: the HTTP API (docs/openapi.yaml) on Javalin/Jetty. Every route but
 * health needs a Bearer API key; the key's tenant sees only its own sandboxes. Sandboxes are made
 * with the ordinary embedded runtime ({@link Sandbox#create}) under the server's policy narrowed by
 * the tenant's, so there is one policy engine, not two.
 */
public final class AgentNestServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AgentNestServer.class);

  /** Request headers Jetty accepts in total; a larger header block is refused with 431. */
  static final int MAX_HEADER_BYTES = 16 * 1024;

  private final ServerConfig config;
  private final TenantStore tenants;
  private final Registry registry;
  private final OwnerRecords ownerRecords;
  private final KeyAuthentication auth;
  private final ServerMetrics metrics = new ServerMetrics();
  private @Nullable String metricsToken;

  private final SandboxService service;
  private final SandboxApi api;
  private final ExecSocket socket;
  private final StateApi state;
  private final ApprovalQueue approvals;
  private final OpenStreams streams;
  private final AuditShipping shipping = new AuditShipping();
  private final Map<String, String> env;
  private final Supplier<List<SandboxInfo>> running;
  private final E2bSandboxes e2bSandboxes;
  private final ExecutorService e2bPumps =
      StreamThreads.pool("agentnest-e2b-pump", StreamThreads.MAX_PUMPS);
  private final ScheduledExecutorService e2bTimers = DaemonThreads.scheduler("agentnest-e2b-timer");
  private final E2bApi e2b;
  private final E2bEnvd e2bEnvd;
  private final ConsoleSessions consoleSessions;
  private final ConsoleApi console;
  private @Nullable Javalin app;
  private @Nullable ServerConnector connector;
  private @Nullable Path unixSocket;
  private @Nullable UnixDomainServerConnector unixConnector;
  private ServerLimits limits = ServerLimits.defaults();

  public AgentNestServer(ServerConfig config, TenantStore tenants) {
    this(config, tenants, Sandbox::create);
  }

  /** A server on {@code store}: shared with other servers when it is PostgreSQL. */
  public AgentNestServer(ServerConfig config, SharedStore store) {
    this(config, store, Sandbox::create, Sandbox::list, Clock.systemUTC(), System.getenv());
  }

  /**
   * A server whose sandboxes {@code creator} makes from the configuration the request and policy
   * give (the local engine wraps {@code Sandbox::create} to keep warm pools of what its user asks
   * for); the policy is applied before, never by, the creator.
   */
  public AgentNestServer(
      ServerConfig config, TenantStore tenants, Function<SandboxConfig, Sandbox> creator) {
    this(config, tenants, creator, Sandbox::list, Clock.systemUTC(), System.getenv());
  }

  /**
   * @param creator makes a sandbox ({@code Sandbox::create})
   * @param running the engine's managed sandboxes, read once at start for re-adoption
   */
  AgentNestServer(
      ServerConfig config,
      TenantStore tenants,
      Function<SandboxConfig, Sandbox> creator,
      Supplier<List<SandboxInfo>> running,
      Clock clock,
      Map<String, String> env) {
    this(config, SharedStore.local(tenants), creator, running, clock, env);
  }

  /**
   * @param store tenants, approvals and console sessions: this server's alone, or shared with other
   *     servers
   * @param creator makes a sandbox ({@code Sandbox::create})
   * @param running the engine's managed sandboxes, read once at start for re-adoption
   */
  AgentNestServer(
      ServerConfig config,
      SharedStore store,
      Function<SandboxConfig, Sandbox> creator,
      Supplier<List<SandboxInfo>> running,
      Clock clock,
      Map<String, String> env) {
    TenantStore tenants = store.tenants();
    this.approvals = new ApprovalQueue(store.approvals(), clock);
    this.running = running;
    this.env = Map.copyOf(env);
    this.config = Objects.requireNonNull(config);
    this.tenants = Objects.requireNonNull(tenants);
    this.auth = new KeyAuthentication(tenants);
    this.registry = new Registry(clock);
    this.ownerRecords = new OwnerRecords(tenants::recordSandbox);
    this.e2bSandboxes = new E2bSandboxes(tenants::keyActive, store.e2b());
    registry.countHeld(e2bSandboxes::paused);
    registry.recordOwners(ownerRecords);
    registry.shareQuota(tenants.quota(), config.policy().maxTtl());
    this.streams = new OpenStreams(tenants::keyActive);
    this.service =
        new SandboxService(config, registry, creator, clock, tenants.storeId(), approvals);
    this.api = new SandboxApi(config, registry, service, streams);
    this.socket = new ExecSocket(service, registry, config.maxJsonBytes(), streams);
    SandboxStates states = new SandboxStates(config, registry, clock, service.floor());
    this.state = new StateApi(config, registry, states);
    this.e2b =
        new E2bApi(
            config,
            registry,
            service,
            states,
            e2bSandboxes,
            auth::e2bTenant,
            clock,
            e2bTimers,
            e2bPumps);
    this.e2bEnvd =
        new E2bEnvd(
            config,
            registry,
            e2bSandboxes,
            new E2bEnvd.Tenants() {
              @Override
              public Tenant active(String name, Context ctx) {
                return auth.activeTenant(name);
              }

              @Override
              public void refused(Context ctx) {
                auth.refused(ctx);
              }
            },
            service,
            new E2bCodeInterpreter(clock, service.taps()));
    this.consoleSessions =
        new ConsoleSessions(
            store.sessions(),
            clock,
            config.tls() != null,
            tenants::adminKeyActive,
            tenants::keyActive);
    this.console =
        new ConsoleApi(
            consoleSessions,
            auth::consoleSignIn,
            auth::activeTenant,
            approvals,
            registry,
            service.taps(),
            api::viewWithUsage,
            config.maxJsonBytes());
    service.onNetworkEvent(metrics.egress());
    approvals.onDecided(metrics.approvals());
    metrics.approvalsWaiting(approvals::waitingCount);
    metrics.sandboxes(registry::countsByTenant, e2bSandboxes::pausedByTenant);
    metrics.auditShipping(shipping::stats);
  }

  /**
   * Refuses a listen address that would put plain HTTP on a network: without TLS only loopback,
   * unless the operator says a TLS-terminating proxy is in front.
   */
  public static void checkBind(ServerConfig config) {
    if (config.tls() != null || config.insecureBehindProxy()) {
      return;
    }
    boolean loopback;
    try {
      InetAddress[] all = InetAddress.getAllByName(config.host());
      loopback = all.length > 0;
      for (InetAddress a : all) {
        loopback &= a.isLoopbackAddress();
      }
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException(
          "listen host '" + config.host() + "' does not resolve: use e.g. 127.0.0.1", e);
    }
    if (!loopback) {
      throw new IllegalArgumentException(
          "refusing to listen on "
              + config.host()
              + " without TLS: API keys would cross the network in clear. Configure tls:"
              + " {keystore, password_env} in server.yaml, listen on 127.0.0.1, or pass"
              + " --insecure-behind-proxy when a TLS-terminating proxy is in front");
    }
  }

  /**
   * Listens on a Unix domain socket instead of TCP (the local engine: {@code agentnest engine}),
   * reachable by this user only (see {@link UnixSocketListener}). Call before {@link #start()}.
   */
  public AgentNestServer listenOnUnixSocket(Path socket) {
    this.unixSocket = socket;
    return this;
  }

  /**
   * Makes {@code dir} (the local engine's socket and key directory) mode 0700, or refuses one that
   * is a symbolic link or another user's: the one check, before anything is written into it.
   */
  public static void ownerOnlyDirectory(Path dir) {
    UnixSocketListener.ownerOnlyDirectory(dir);
  }

  /** Open client connections: the local engine is idle when there are none and no sandboxes. */
  public int openConnections() {
    UnixDomainServerConnector u = unixConnector;
    if (u != null) {
      return u.getConnectedEndPoints().size();
    }
    ServerConnector c = connector;
    return c == null ? 0 : c.getConnectedEndPoints().size();
  }

  /** Adopts the sandboxes a previous server on this store left, then listens; returns the port. */
  public int start() {
    if (unixSocket == null) {
      checkBind(config);
    }
    metricsToken = MetricsEndpoint.token(config.metrics(), env);
    // Before adoption, so that the collectors get every record this server writes.
    shipping.start(config.audit(), env);
    adopt(
        running,
        (id, tenant) -> {
          // The handle carries no approvals of its own: the tenant's floor and queue apply now.
          ApprovalFloor.Applied a = service.floor().apply(tenant, ApprovalPolicy.none(), false);
          return Sandbox.connect(id, a.rules(), a.handler());
        });
    Javalin j =
        Javalin.create(
            cfg -> {
              cfg.startup.showJavalinBanner = false;
              cfg.jetty.threadPool = JettyConnectors.threadPool(limits);
              cfg.http.maxRequestSize = Math.max(config.maxBodyBytes(), config.maxJsonBytes());
              cfg.http.prefer405over404 = true;
              // Multipart bodies (E2B's file uploads) are held to max_body like every other body.
              cfg.jetty.multipartConfig.maxFileSize(config.maxBodyBytes(), SizeUnit.BYTES);
              cfg.jetty.multipartConfig.maxTotalRequestSize(config.maxBodyBytes(), SizeUnit.BYTES);
              cfg.jetty.multipartConfig.maxInMemoryFileSize(64 * 1024, SizeUnit.BYTES);
              MemoryBudget memory = new MemoryBudget(limits.memoryBudgetBytes());
              MemoryBudget spool = MemoryBudget.spool(MemoryBudget.defaultSpoolBytes());
              cfg.routes.addHttpHandler(
                  HandlerType.BEFORE,
                  "*",
                  ctx -> {
                    ctx.attribute(MemoryBudget.ATTR, memory);
                    ctx.attribute(MemoryBudget.SPOOL_ATTR, spool);
                  });
              cfg.routes.addHttpHandler(HandlerType.AFTER, "*", MemoryBudget::releaseAll);
              cfg.requestLogger.http(
                  (ctx, ms) ->
                      metrics.request(
                          ctx.method().name(),
                          MetricsEndpoint.route(ctx),
                          ctx.statusCode(),
                          ctx.attribute(Exchange.ERROR_CODE),
                          (long) (ms * 1_000_000)));
              cfg.routes.addHttpHandler(
                  HandlerType.GET,
                  "/metrics",
                  ctx -> MetricsEndpoint.serve(ctx, metrics, metricsToken, auth));
              cfg.jetty.modifyHttpConfiguration(JettyConnectors::configure);
              cfg.jetty.addConnector(
                  (server, http) -> {
                    Path sock = unixSocket;
                    if (sock == null) {
                      ServerConnector c =
                          JettyConnectors.connector(server, http, config, env, limits);
                      connector = c;
                      return c;
                    }
                    UnixDomainServerConnector u =
                        UnixSocketListener.connector(server, sock, new HttpConnectionFactory(http));
                    // One user's socket: no per-address bound, the same body and idle bounds.
                    ConnectionGuard.install(server, u, limits.withoutAddressBound());
                    unixConnector = u;
                    return u;
                  });
              for (Route r : Route.ALL) {
                cfg.routes.addHttpHandler(
                    HandlerType.findOrCreate(r.method()), r.path(), wrap(r, handler(r)));
              }
              // The WebSocket form of a streamed execution: authenticated before the upgrade with
              // an API key only (a cookie would let another site's page open it in a browser).
              Route stream = new Route("GET", ExecSocket.PATH, true);
              cfg.routes.addHttpHandler(
                  HandlerType.WEBSOCKET_BEFORE_UPGRADE,
                  ExecSocket.PATH,
                  ctx -> {
                    if (ctx.header("Authorization") == null) {
                      throw new ApiException(
                          401,
                          ErrorCode.UNAUTHENTICATED,
                          "a stream needs the API key in the Authorization header",
                          "send Authorization: Bearer <API key> with the upgrade");
                    }
                    wrap(stream, c -> {}).handle(ctx);
                  });
              cfg.routes.addWsHandler(WsHandlerType.WEBSOCKET, ExecSocket.PATH, socket::configure);
              // E2B's API and its sandboxes' services (docs/e2b.md): errors in E2B's shapes.
              e2b.register(
                  (method, route) ->
                      cfg.routes.addHttpHandler(
                          HandlerType.findOrCreate(method), route.getKey(), route.getValue()));
              // The web console (docs/console.md): its pages, sign-in and event stream.
              cfg.routes.addHttpHandler(HandlerType.GET, "/console", console::asset);
              cfg.routes.addHttpHandler(HandlerType.GET, "/console/", console::asset);
              // Before {asset}: Javalin matches routes in the order they were added.
              cfg.routes.addHttpHandler(HandlerType.POST, "/console/session", console::open);
              cfg.routes.addHttpHandler(HandlerType.GET, "/console/session", console::current);
              cfg.routes.addHttpHandler(HandlerType.DELETE, "/console/session", console::close);
              cfg.routes.addHttpHandler(HandlerType.GET, "/console/events", console::events);
              cfg.routes.addHttpHandler(
                  HandlerType.GET, "/console/executions", console::executions);
              cfg.routes.addHttpHandler(HandlerType.GET, "/console/{asset}", console::asset);
              for (String method : List.of("GET", "POST", "DELETE", "PUT")) {
                cfg.routes.addHttpHandler(
                    HandlerType.findOrCreate(method), E2bEnvd.PREFIX + "/<rest>", e2bEnvd::handle);
              }
              cfg.routes.exception(ApiException.class, (e, ctx) -> Exchange.send(ctx, e));
              cfg.routes.exception(
                  StoreUnavailableException.class,
                  (e, ctx) -> {
                    LOG.warn("{} {}: {}", ctx.method(), ctx.path(), e.getMessage());
                    Exchange.send(
                        ctx,
                        new ApiException(
                            503,
                            ErrorCode.INTERNAL,
                            "the server's shared store does not answer",
                            "retry in a few seconds; the operator finds the cause in the server"
                                + " log"));
                  });
              cfg.routes.exception(
                  HttpResponseException.class, (e, ctx) -> Exchange.send(ctx, Failures.of(e)));
              cfg.routes.exception(
                  Exception.class,
                  (e, ctx) -> {
                    LOG.warn("{} {} failed", ctx.method(), ctx.path(), e);
                    Exchange.send(
                        ctx,
                        new ApiException(
                            500,
                            ErrorCode.INTERNAL,
                            "the server failed: " + e.getClass().getSimpleName(),
                            "retry; if it persists, see the server log"));
                  });
            });
    j.start();
    app = j;
    return port();
  }

  /** The bound port (0 on a Unix domain socket). */
  public int port() {
    if (unixConnector != null) {
      return 0;
    }
    ServerConnector c = connector;
    if (c == null) {
      throw new IllegalStateException("not started");
    }
    return c.getLocalPort();
  }

  /** Whether requests use TLS. */
  public boolean tls() {
    return config.tls() != null;
  }

  /** Sandboxes alive on this server (all tenants). */
  public int sandboxCount() {
    return registry.size();
  }

  /**
   * Replaces the limits on threads and connections ({@link ServerLimits#defaults()} unless set);
   * before {@link #start}.
   */
  void limits(ServerLimits l) {
    if (app != null) {
      throw new IllegalStateException("limits are set before start");
    }
    limits = Objects.requireNonNull(l);
  }

  private Handler handler(Route r) {
    return switch (r.key()) {
      case "get /v1/health" -> ctx -> Exchange.json(ctx, 200, Map.of("status", "ok"));
      case "get /v1/tenant" -> api::whoami;
      case "post /v1/sandboxes" -> api::create;
      case "get /v1/sandboxes" -> api::list;
      case "get /v1/sandboxes/{id}" -> api::get;
      case "delete /v1/sandboxes/{id}" -> api::destroy;
      case "post /v1/sandboxes/{id}/extend" -> api::extend;
      case "post /v1/sandboxes/{id}/exec" -> api::exec;
      case "post /v1/sandboxes/{id}/code" -> api::code;
      case "get /v1/sandboxes/{id}/files" -> api::listFiles;
      case "delete /v1/sandboxes/{id}/files" -> api::deleteFile;
      case "get /v1/sandboxes/{id}/files/content" -> api::download;
      case "put /v1/sandboxes/{id}/files/content" -> api::upload;
      case "post /v1/sandboxes/{id}/files/mkdir" -> api::mkdir;
      case "get /v1/sandboxes/{id}/archive" -> api::archiveOut;
      case "put /v1/sandboxes/{id}/archive" -> api::archiveIn;
      case "post /v1/sandboxes/{id}/executions/{execution}/cancel" -> api::cancel;
      case "get /v1/sandboxes/{id}/stream" ->
          ctx -> {
            throw new ApiException(
                426,
                ErrorCode.INVALID_FIELD,
                "this route is a WebSocket",
                "upgrade the connection (Connection: Upgrade, Upgrade: websocket), or use"
                    + " Accept: text/event-stream on /exec or /code");
          };
      case "post /v1/sandboxes/{id}/fork" -> state::fork;
      case "post /v1/sandboxes/{id}/snapshots" -> state::save;
      case "get /v1/sandboxes/{id}/artifacts" -> state::artifacts;
      case "get /v1/sandboxes/{id}/audit" -> state::audit;
      case "get /v1/approvals" -> approvals::list;
      case "get /v1/audit" -> ctx -> state.tenantAudit(ctx, tenants);
      case "get /v1/audit/verify" -> ctx -> AuditAccess.adminOnly(ctx, ConsoleApi::verify);
      case "get /v1/audit/shipping" -> ctx -> AuditAccess.adminOnly(ctx, shipping::get);
      case "post /v1/approvals/{id}" ->
          ctx ->
              approvals.decide(ctx, config.maxJsonBytes(), config.policy().approverRoleRequired());
      case "get /v1/snapshots" -> state::list;
      case "delete /v1/snapshots/{name}" -> state::delete;
      case "post /v1/snapshots/{name}/restore" -> state::restore;
      default -> throw new IllegalStateException("no handler for " + r.key());
    };
  }

  private Handler wrap(Route r, Handler h) {
    if (!r.authenticated()) {
      return h;
    }
    return ctx -> {
      Tenant t;
      ConsoleSessions.Session session =
          ctx.header("Authorization") == null ? consoleSessions.of(ctx) : null;
      if (session != null) {
        // The web console: its cookie instead of a key, and its CSRF token on every change.
        if (!ctx.method().name().equals("GET")) {
          ConsoleSessions.checkCsrf(ctx, session);
        }
        if (session.admin()) {
          AdminScope.enter(r, ctx, registry, tenants);
          h.handle(ctx);
          return;
        }
        t = auth.activeTenant(session.tenant);
        ctx.attribute(Exchange.TENANT, t);
        ctx.attribute(ApproverRole.ROLE, session.role);
        ctx.attribute(ApproverRole.KEY_ID, session.keyId);
        ApproverRole.scope(r, ctx);
        ctx.attribute(ApprovalQueue.PRINCIPAL, ApproverRole.principal("console", t, ctx));
        h.handle(ctx);
        return;
      }
      // Guessing keys costs a store lookup each: an address, a key id or the server that keeps
      // failing is slowed down (429) before the next key is looked at.
      TenantStore.Check c = auth.bearer(ctx);
      t = Objects.requireNonNull(c.tenant());
      auth.acquire(t);
      ctx.attribute(Exchange.TENANT, t);
      ctx.attribute(ApproverRole.ROLE, c.role());
      ctx.attribute(ApproverRole.KEY_ID, c.keyId());
      ApproverRole.scope(r, ctx);
      ctx.attribute(ApprovalQueue.PRINCIPAL, ApproverRole.principal("api", t, ctx));
      h.handle(ctx);
    };
  }

  /**
   * Re-adopts the sandboxes of this tenant store that are still running (a restart, or a crashed
   * server): who owns each is read from the labels this server's store wrote at create, which the
   * sandbox cannot change, never from anything the sandbox says. A sandbox that cannot be reached
   * is left to its TTL and {@code agentnest prune}.
   *
   * @return how many were adopted
   */
  int adopt(Supplier<List<SandboxInfo>> list, BiFunction<String, Tenant, Sandbox> connect) {
    return Adoption.adopt(tenants, registry, list, connect);
  }

  /**
   * Stops listening and leaves the sandboxes running (they keep their TTL): the next server on the
   * same tenant store adopts them, so a restart loses no tenant's work. {@link #destroyAll} first
   * when they should go too.
   */
  @Override
  public void close() {
    Javalin j = app;
    app = null;
    if (j != null) {
      j.stop();
    }
    socket.close();
    api.close();
    service.close();
    e2b.close();
    e2bSandboxes.cancelAll();
    e2bPumps.shutdownNow();
    e2bTimers.shutdownNow();
    approvals.denyAll();
    streams.close();
    registry.detachAll();
    ownerRecords.close();
    shipping.stop();
  }

  /** The approvals queue its sandboxes wait on (tests ask through it as a sandbox would). */
  ApprovalQueue approvals() {
    return approvals;
  }

  /** Destroys every sandbox this server holds (all tenants). */
  public void destroyAll() {
    registry.destroyAll();
  }
}
