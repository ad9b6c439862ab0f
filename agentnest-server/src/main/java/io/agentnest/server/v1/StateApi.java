package io.agentnest.server.v1;

import io.agentnest.Artifact;
import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.SnapshotInfo;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.Failures;
import io.agentnest.server.service.Registry;
import io.agentnest.server.service.SandboxStates;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.javalin.http.Context;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code /v1} routes that copy a sandbox's state: fork, snapshots (save, list, restore, delete)
 * and artifacts, and the audit routes. What a tenant may do with its snapshots is {@link
 * SandboxStates}', which the E2B face's pause and resume share.
 */
public final class StateApi {
  private static final int MAX_GLOB = 1024;

  /** Audit records one request may ask for: bounds the reply, whatever the log holds. */
  static final int MAX_AUDIT = 1000;

  private final ServerConfig config;
  private final Registry registry;
  private final SandboxStates states;

  public StateApi(ServerConfig config, Registry registry, SandboxStates states) {
    this.config = config;
    this.registry = registry;
    this.states = states;
  }

  /** POST /v1/sandboxes/{id}/fork: an independent copy, counted against the tenant's quota. */
  public void fork(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Registry.Entry entry = states.fork(t, registry.get(t.name(), ctx.pathParam("id")));
    Optional<ForkReport> report = entry.sandbox().forkReport();
    Exchange.json(
        ctx,
        201,
        new Wire.ForkView(
            SandboxApi.view(entry),
            report.map(f -> f.mode().name().toLowerCase(Locale.ROOT)).orElse(null),
            report.map(StateApi::report).orElse(null)));
  }

  private static Wire.ForkReportView report(ForkReport f) {
    return new Wire.ForkReportView(
        f.parentId(),
        f.mode().name().toLowerCase(Locale.ROOT),
        f.sessions(),
        f.skipped().stream()
            .map(k -> new Wire.SkippedView(k.session(), k.name(), k.type(), k.reason()))
            .toList(),
        f.fileBytes(),
        f.stateBytes(),
        f.duration().toMillis());
  }

  /** POST /v1/sandboxes/{id}/snapshots {name, replace}: saves the sandbox's state. */
  public void save(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Registry.Entry e = registry.get(t.name(), ctx.pathParam("id"));
    Wire.SaveSnapshot req =
        Wire.read(Bodies.read(ctx, config.maxJsonBytes()), Wire.SaveSnapshot.class);
    SnapshotInfo info = states.save(t, e, req.name(), Boolean.TRUE.equals(req.replace()));
    Exchange.json(ctx, 201, view(t, info));
  }

  /** GET /v1/snapshots: the tenant's snapshots, newest first. */
  public void list(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    List<Wire.SnapshotView> out = new ArrayList<>();
    for (SnapshotInfo s : Sandbox.snapshots()) {
      if (s.name().startsWith(SandboxStates.prefix(t))) {
        out.add(view(t, s));
      }
    }
    Exchange.json(ctx, 200, Map.of("snapshots", out));
  }

  /** DELETE /v1/snapshots/{name}. */
  public void delete(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    String name = ctx.pathParam("name");
    if (!states.delete(t, name)) {
      throw SandboxStates.notFound(name);
    }
    ctx.status(204);
  }

  /**
   * POST /v1/snapshots/{name}/restore: a new sandbox from the snapshot, with the configuration it
   * was saved with, checked again against today's policy (the server's or the tenant's may have
   * tightened since) and counted against the quota before it starts.
   */
  public void restore(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Exchange.json(ctx, 201, SandboxApi.view(states.restore(t, ctx.pathParam("name"))));
  }

  /** GET /v1/sandboxes/{id}/artifacts?glob=G: regular files matching, with size and sha256. */
  public void artifacts(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Registry.Entry e = registry.get(t.name(), ctx.pathParam("id"));
    String glob = glob(ctx.queryParam("glob"));
    List<Artifact> found;
    try {
      found = e.sandbox().artifacts(glob);
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
    Exchange.json(
        ctx,
        200,
        Map.of(
            "artifacts",
            found.stream()
                .map(a -> new Wire.ArtifactView(a.path(), a.size(), a.sha256()))
                .toList()));
  }

  /**
   * GET /v1/sandboxes/{id}/audit?type=T&since=ISO&limit=N: the sandbox's audit records, newest
   * first, from the server's own log (the chain stays the server's; a tenant reads only records of
   * its own sandboxes, which the route's ownership check guarantees).
   */
  public void audit(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Registry.Entry e = registry.get(t.name(), ctx.pathParam("id"));
    answer(ctx, filters(ctx, AuditQuery.builder().sandbox(e.sandbox().id())));
  }

  /**
   * The tenant's sandboxes, newest first: the store's record, and the live ones whose record is
   * still being written (it is written behind the create).
   */
  private List<String> ownedIds(Tenant t, TenantStore tenants) {
    List<String> stored = tenants.sandboxIds(t.name(), AuditQuery.MAX_SANDBOX_IDS);
    Set<String> known = new HashSet<>(stored);
    List<String> ids = new ArrayList<>();
    for (Registry.Entry e : registry.list(t.name())) {
      if (!known.contains(e.sandbox().id())) {
        ids.add(e.sandbox().id());
      }
    }
    ids.addAll(stored);
    return ids.size() > AuditQuery.MAX_SANDBOX_IDS
        ? List.copyOf(ids.subList(0, AuditQuery.MAX_SANDBOX_IDS))
        : ids;
  }

  /**
   * GET /v1/audit?sandbox=ID&type=T&since=ISO&until=ISO&text=S&limit=N: the tenant's audit records
   * across its sandboxes, destroyed ones too (the server keeps which tenant each sandbox was),
   * newest first. Another tenant's sandbox id is answered as unknown, like every other route.
   */
  public void tenantAudit(Context ctx, TenantStore tenants) {
    Tenant t = Exchange.tenant(ctx);
    List<String> ids = ownedIds(t, tenants);
    String sandbox = ctx.queryParam("sandbox");
    AuditQuery.Builder q = AuditQuery.builder();
    if (sandbox != null && !sandbox.isEmpty()) {
      if (!ids.contains(sandbox)) {
        throw new ApiException(
            404,
            ErrorCode.NOT_FOUND,
            "sandbox '" + Escape.id(sandbox) + "' is not one of this tenant's",
            "list them with GET /v1/sandboxes; the id must be whole");
      }
      q.sandboxIds(List.of(sandbox));
    } else {
      q.sandboxIds(ids);
    }
    String until = ctx.queryParam("until");
    if (until != null && !until.isEmpty()) {
      q.until(instant("until", until));
    }
    String text = ctx.queryParam("text");
    if (text != null && !text.isEmpty()) {
      if (text.length() > 200) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "text is longer than 200 characters",
            "search for a shorter piece of the record");
      }
      q.text(text);
    }
    answer(ctx, filters(ctx, q));
  }

  private static AuditQuery.Builder filters(Context ctx, AuditQuery.Builder q) {
    q.newestFirst();
    String type = ctx.queryParam("type");
    if (type != null && !type.isEmpty()) {
      if (!AuditEvent.TYPES.contains(type)) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "audit type '" + Escape.id(type) + "' is unknown",
            "use one of " + String.join(", ", AuditEvent.TYPES.stream().sorted().toList()));
      }
      q.type(type);
    }
    String since = ctx.queryParam("since");
    if (since != null && !since.isEmpty()) {
      q.since(instant("since", since));
    }
    q.limit(limit(ctx.queryParam("limit")));
    return q;
  }

  private static Instant instant(String field, String raw) {
    try {
      return Instant.parse(raw);
    } catch (DateTimeParseException ex) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          field + " '" + Escape.id(raw) + "' is not an ISO-8601 instant",
          "send e.g. " + field + "=2026-12-04T10:00:00Z");
    }
  }

  private static void answer(Context ctx, AuditQuery.Builder q) {
    List<AuditEvent> events = AuditLog.shared().query(q.build());
    List<Wire.AuditView> out = new ArrayList<>();
    for (AuditEvent ev : events) {
      out.add(
          new Wire.AuditView(
              ev.seq(), ev.time().toString(), ev.type(), ev.actor(), ev.sandboxId(), ev.data()));
    }
    Exchange.json(ctx, 200, Map.of("events", out));
  }

  private static int limit(@Nullable String raw) {
    if (raw == null || raw.isEmpty()) {
      return AuditQuery.DEFAULT_LIMIT;
    }
    try {
      int n = Integer.parseInt(raw);
      if (n >= 1 && n <= MAX_AUDIT) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // refused below with the bounds
    }
    throw ApiException.badRequest(
        ErrorCode.INVALID_FIELD,
        "limit '" + Escape.id(raw) + "' is not a number in 1.." + MAX_AUDIT,
        "send e.g. limit=100");
  }

  /**
   * A glob is matched against paths relative to the workspace, so it needs no '..' and no leading
   * '/': either is refused here (as a path would be) rather than matching nothing in silence.
   */
  static String glob(@Nullable String glob) {
    String g = glob == null || glob.isEmpty() ? "**" : glob;
    if (g.length() > MAX_GLOB) {
      throw ApiException.badRequest(
          ErrorCode.BAD_PATH,
          "glob is longer than " + MAX_GLOB + " characters",
          "use a shorter glob, e.g. output/**.png");
    }
    return Paths.check(g, false);
  }

  private static Wire.SnapshotView view(Tenant t, SnapshotInfo s) {
    return new Wire.SnapshotView(
        s.name().substring(SandboxStates.prefix(t).length()),
        s.created().toString(),
        s.image(),
        s.bytes(),
        s.sessions(),
        s.memory());
  }
}
