package io.agentnest.server;

import io.agentnest.Artifact;
import io.agentnest.ForkReport;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.javalin.http.Context;
import java.time.Clock;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The routes that copy a sandbox's state: fork, snapshots (save, list, restore, delete) and
 * artifacts. Snapshots live in the installation's one store, so a tenant's snapshot is stored as
 * {@code <tenant>.<name>}: tenant names have no dot, so the prefix cannot be forged, and a tenant
 * never sees, restores or deletes a name without its own prefix (another tenant's name is 404).
 */
final class StateApi {
  /** What a client may call a snapshot: the store's rule, without dots, short enough to prefix. */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,35}");

  private static final int MAX_GLOB = 1024;

  /** Audit records one request may ask for: bounds the reply, whatever the log holds. */
  static final int MAX_AUDIT = 1000;

  private final ServerConfig config;
  private final Registry registry;
  private final Clock clock;
  private final SnapshotQuota snapshotQuota = new SnapshotQuota(Sandbox::snapshots);

  private final ApprovalFloor floor;

  StateApi(ServerConfig config, Registry registry, Clock clock, ApprovalFloor floor) {
    this.config = config;
    this.registry = registry;
    this.clock = clock;
    this.floor = floor;
  }

  /** POST /v1/sandboxes/{id}/fork: an independent copy, counted against the tenant's quota. */
  void fork(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    Registry.Entry entry = fork(t, registry.get(t.name(), ctx.pathParam("id")));
    Optional<ForkReport> report = entry.sandbox().forkReport();
    AgentNestServer.json(
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

  /** An independent copy of {@code parent}, registered for {@code t} within its quota. */
  Registry.Entry fork(Tenant t, Registry.Entry parent) {
    Registry.Reservation r = registry.reserve(t, parent.memoryBytes(), parent.cpus());
    Sandbox copy;
    try {
      copy = parent.sandbox().fork();
    } catch (RuntimeException e) {
      registry.release(r);
      throw Failures.of(e);
    }
    Registry.Entry entry =
        new Registry.Entry(
            t.name(),
            copy,
            parent.image(),
            parent.memoryBytes(),
            parent.cpus(),
            clock.instant(),
            ConcurrentHashMap.newKeySet());
    entry.sessions().addAll(parent.sessions());
    registry.commit(r, entry);
    return entry;
  }

  /** POST /v1/sandboxes/{id}/snapshots {name, replace}: saves the sandbox's state. */
  void save(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    Registry.Entry e = registry.get(t.name(), ctx.pathParam("id"));
    Wire.SaveSnapshot req =
        Wire.read(SandboxApi.body(ctx, config.maxJsonBytes()), Wire.SaveSnapshot.class);
    SnapshotInfo info = save(t, e, req.name(), Boolean.TRUE.equals(req.replace()));
    AgentNestServer.json(ctx, 201, view(t, info));
  }

  /** Saves {@code e} as the tenant's snapshot {@code name}, within its snapshot quota. */
  SnapshotInfo save(Tenant t, Registry.Entry e, @Nullable String name, boolean replace) {
    String stored = stored(t, name);
    return snapshotQuota.within(
        Policies.effective(config.policy(), t),
        prefix(t),
        stored,
        () -> {
          try {
            return e.sandbox().snapshot(stored, replace);
          } catch (RuntimeException ex) {
            throw map(ex, String.valueOf(name));
          }
        },
        n -> Sandbox.removeSnapshot(n));
  }

  /** GET /v1/snapshots: the tenant's snapshots, newest first. */
  void list(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    List<Wire.SnapshotView> out = new ArrayList<>();
    for (SnapshotInfo s : Sandbox.snapshots()) {
      if (s.name().startsWith(prefix(t))) {
        out.add(view(t, s));
      }
    }
    AgentNestServer.json(ctx, 200, Map.of("snapshots", out));
  }

  /** DELETE /v1/snapshots/{name}. */
  void delete(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    String name = ctx.pathParam("name");
    if (!delete(t, name)) {
      throw notFound(name);
    }
    ctx.status(204);
  }

  /** Removes the tenant's snapshot {@code name}; false when there was none. */
  boolean delete(Tenant t, String name) {
    return Sandbox.removeSnapshot(stored(t, name));
  }

  /**
   * POST /v1/snapshots/{name}/restore: a new sandbox from the snapshot, with the configuration it
   * was saved with, checked again against today's policy (the server's or the tenant's may have
   * tightened since) and counted against the quota before it starts.
   */
  void restore(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    AgentNestServer.json(ctx, 201, SandboxApi.view(restore(t, ctx.pathParam("name"))));
  }

  /** A new sandbox of {@code t} from its snapshot {@code name}, within policy and quota. */
  Registry.Entry restore(Tenant t, String name) {
    String stored = stored(t, name);
    SnapshotInfo info =
        Sandbox.snapshots().stream()
            .filter(s -> s.name().equals(stored))
            .findFirst()
            .orElseThrow(() -> notFound(name));
    SandboxConfig saved = info.config();
    // Defence in depth: the name's prefix says whose it is; the label the server wrote must agree.
    if (!t.name().equals(saved.labels().get(SandboxService.TENANT_LABEL))) {
      throw notFound(name);
    }
    Policies.Effective p = Policies.effective(config.policy(), t);
    p.check(
        saved.image(),
        saved.memoryBytes(),
        saved.cpus(),
        saved.ttl(),
        saved.network().isNone() ? List.of() : saved.network().rules());
    // A snapshot saved before policy.max_pids (or a tenant's lower cap) is held to it now.
    p.pids(saved.pidsLimit(), saved.pidsLimit());
    Registry.Reservation r = registry.reserve(t, saved.memoryBytes(), saved.cpus());
    // The saved rules are those of the day it was saved: today's floor and the tenant's queue
    // apply (a snapshot from before policy.approvals: recommended must not restore into a sandbox
    // that deletes without asking). A fork of it inherits them.
    ApprovalFloor.Applied applied =
        floor.apply(
            t, saved.approvals(), saved.network().onUnknownHost() == NetworkPolicy.Mode.ASK);
    Sandbox sb;
    try {
      sb =
          Sandbox.restore(
              stored,
              saved.toBuilder()
                  .approvals(applied.rules())
                  .approvalHandler(applied.handler())
                  .build());
    } catch (RuntimeException ex) {
      registry.release(r);
      throw map(ex, name);
    }
    Registry.Entry entry =
        new Registry.Entry(
            t.name(),
            sb,
            saved.image(),
            saved.memoryBytes(),
            saved.cpus(),
            clock.instant(),
            ConcurrentHashMap.newKeySet());
    entry.sessions().addAll(info.sessions());
    registry.commit(r, entry);
    return entry;
  }

  /** GET /v1/sandboxes/{id}/artifacts?glob=G: regular files matching, with size and sha256. */
  void artifacts(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    Registry.Entry e = registry.get(t.name(), ctx.pathParam("id"));
    String glob = glob(ctx.queryParam("glob"));
    List<Artifact> found;
    try {
      found = e.sandbox().artifacts(glob);
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
    AgentNestServer.json(
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
  void audit(Context ctx) {
    Tenant t = SandboxApi.tenant(ctx);
    Registry.Entry e = registry.get(t.name(), ctx.pathParam("id"));
    answer(ctx, filters(ctx, AuditQuery.builder().sandbox(e.sandbox().id())));
  }

  /**
   * GET /v1/audit?sandbox=ID&type=T&since=ISO&until=ISO&text=S&limit=N: the tenant's audit records
   * across its sandboxes, destroyed ones too (the server keeps which tenant each sandbox was),
   * newest first. Another tenant's sandbox id is answered as unknown, like every other route.
   */
  void tenantAudit(Context ctx, TenantStore tenants) {
    Tenant t = SandboxApi.tenant(ctx);
    List<String> ids = tenants.sandboxIds(t.name(), AuditQuery.MAX_SANDBOX_IDS);
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
    AgentNestServer.json(ctx, 200, Map.of("events", out));
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

  private static String prefix(Tenant t) {
    return t.name() + ".";
  }

  private static String stored(Tenant t, @Nullable String name) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "snapshot name '" + Escape.id(String.valueOf(name)) + "' is invalid",
          "use 1-36 letters, digits, '_' or '-', starting with a letter or digit");
    }
    return prefix(t) + name;
  }

  private static Wire.SnapshotView view(Tenant t, SnapshotInfo s) {
    return new Wire.SnapshotView(
        s.name().substring(prefix(t).length()),
        s.created().toString(),
        s.image(),
        s.bytes(),
        s.sessions(),
        s.memory());
  }

  private static ApiException notFound(String name) {
    return new ApiException(
        404,
        ErrorCode.NOT_FOUND,
        "snapshot '" + Escape.id(name) + "' not found",
        "list yours with GET /v1/snapshots; other tenants' snapshots are never visible");
  }

  private static ApiException map(RuntimeException e, String name) {
    if (!(e instanceof SnapshotException s)) {
      return Failures.of(e);
    }
    SnapshotException.Reason reason = s.reason();
    int status = Failures.status(reason);
    if (status == 404) {
      return notFound(name);
    }
    // The store's message names the stored (prefixed) name and host paths: the client gets the
    // reason and its own name only.
    return new ApiException(
        status,
        ErrorCode.SNAPSHOT,
        switch (reason) {
          case EXISTS -> "snapshot '" + Escape.id(name) + "' already exists";
          case SECRET -> "snapshot '" + Escape.id(name) + "' refused: the state holds a secret";
          default -> "snapshot '" + Escape.id(name) + "' failed: " + reason.code();
        },
        switch (reason) {
          case EXISTS -> "choose another name, or send \"replace\": true";
          case SECRET -> "the sandbox's state holds a secret's value: remove it first";
          default -> "see the server log; retry once the operator has checked the store";
        },
        Map.of("reason", reason.code()));
  }
}
