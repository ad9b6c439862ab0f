package io.agentnest.server.v1;

import io.agentnest.Artifact;
import io.agentnest.Execution;
import io.agentnest.FileInfo;
import io.agentnest.ResourceUsage;
import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.server.approvals.ApproverRole;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.MemoryBudget;
import io.agentnest.server.http.OpenStreams;
import io.agentnest.server.http.Transfers;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.Failures;
import io.agentnest.server.service.Policies;
import io.agentnest.server.service.Registry;
import io.agentnest.server.service.SandboxService;
import io.agentnest.server.service.UsageCache;
import io.agentnest.server.service.UserLabels;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.spi.Backends;
import io.javalin.http.Context;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The sandbox routes of {@code /v1}: lifecycle, exec and code (plain or server-sent events), files.
 * What a request asks of a tenant's sandbox is decided by the {@link SandboxService} every face
 * shares; this class reads the request and writes the answer.
 */
public final class SandboxApi implements AutoCloseable {
  /** The most files one archive request names. */
  static final int MAX_ARCHIVE_ENTRIES = 10_000;

  private final ServerConfig config;
  private final Registry registry;
  private final SandboxService service;

  private final ExecutionEvents events;
  private final UsageCache usage;

  public SandboxApi(
      ServerConfig config, Registry registry, SandboxService service, OpenStreams streams) {
    this.events = new ExecutionEvents(streams);
    this.config = config;
    this.registry = registry;
    this.service = service;
    this.usage = service.usage();
  }

  public void whoami(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Exchange.json(
        ctx,
        200,
        new Wire.TenantView(
            t.name(),
            t.maxSandboxes(),
            t.memoryBytes(),
            t.cpus(),
            t.requestsPerSecond(),
            t.executionsPerMinute(),
            registry.tenantUsage(t.name()),
            service.executionsUsed(t.name()),
            ApproverRole.role(ctx).label(),
            config.policy().approverRoleRequired() || t.approverRoleRequired()));
  }

  public void create(Context ctx) {
    Tenant t = Exchange.tenant(ctx);
    Wire.CreateSandbox req =
        Wire.read(Bodies.read(ctx, config.maxJsonBytes()), Wire.CreateSandbox.class);
    Registry.Entry e = service.create(t, req);
    // The labels it was made with: asking the engine back costs a round trip (3 ms on Docker), and
    // a pooled sandbox's own labels reach the engine only after the hand-out.
    Exchange.json(ctx, 201, view(e, e.sandbox().config().labels(), null));
  }

  public void list(Context ctx) {
    List<Wire.SandboxView> out = new ArrayList<>();
    usage.retain(registry);
    List<Registry.Entry> entries =
        Exchange.admin(ctx) ? registry.all() : registry.list(Exchange.tenant(ctx).name());
    Map<String, Map<String, String>> engine = new HashMap<>();
    if (!entries.isEmpty()) {
      try {
        for (SandboxInfo i : Backends.get(entries.get(0).sandbox().config().backend()).list()) {
          engine.put(i.id(), i.labels());
        }
      } catch (RuntimeException unreachable) {
        // each view falls back to its configured labels
      }
    }
    for (Registry.Entry e : entries) {
      Map<String, String> labels = engine.get(e.sandbox().id());
      out.add(
          view(
              e,
              labels != null ? labels : e.sandbox().config().labels(),
              usage.get(e.sandbox()).orElse(null)));
    }
    Exchange.json(ctx, 200, Map.of("sandboxes", out));
  }

  public void get(Context ctx) {
    Registry.Entry e = entry(ctx);
    Exchange.json(ctx, 200, view(e, engineLabels(e), usage.get(e.sandbox()).orElse(null)));
  }

  public void destroy(Context ctx) {
    Registry.Entry e = entry(ctx);
    registry.remove(e.sandbox().id());
    ctx.status(204);
  }

  public void extend(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.Extend req = Wire.read(Bodies.read(ctx, config.maxJsonBytes()), Wire.Extend.class);
    long most = Policies.effective(config.policy(), Exchange.tenant(ctx)).maxTtl().toSeconds();
    // Above max_ttl no extension can be allowed; checked first so that a huge number never
    // reaches the time arithmetic (it overflowed into a 500).
    if (req.seconds() <= 0 || req.seconds() > most) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "seconds must be in 1.." + most + " (the max_ttl), got " + req.seconds(),
          "send e.g. {\"seconds\": 600}");
    }
    service.extend(Exchange.tenant(ctx), e, req.seconds());
    Exchange.json(ctx, 200, view(e));
  }

  public void exec(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.Exec req = Wire.read(Bodies.read(ctx, config.maxJsonBytes()), Wire.Exec.class);
    answer(ctx, e, service.exec(Exchange.tenant(ctx), e, req));
  }

  public void code(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.Code req = Wire.read(Bodies.read(ctx, config.maxJsonBytes()), Wire.Code.class);
    answer(ctx, e, service.code(Exchange.tenant(ctx), e, req));
  }

  private void answer(Context ctx, Registry.Entry e, SandboxService.Call call) {
    if (wantsStream(ctx)) {
      events.stream(ctx, e.sandbox().id(), SandboxService.start(call), call.keepOnLeave());
    } else {
      // A whole result is held until it is written: its output bound is reserved first.
      MemoryBudget.reserve(ctx, call.maxOutput(), "an execution's output");
      Exchange.json(ctx, 200, Wire.result(SandboxService.run(call)));
    }
  }

  public void listFiles(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), true);
    boolean recursive = "true".equals(ctx.queryParam("recursive"));
    try {
      List<FileInfo> files =
          recursive ? e.sandbox().files().listRecursive(path) : e.sandbox().files().list(path);
      Exchange.json(ctx, 200, Map.of("files", files.stream().map(Wire::file).toList()));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  public void deleteFile(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), false);
    try {
      if ("true".equals(ctx.queryParam("recursive"))) {
        e.sandbox().files().deleteRecursive(path);
      } else {
        e.sandbox().files().delete(path);
      }
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
    ctx.status(204);
  }

  public void mkdir(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.MakeDir req = Wire.read(Bodies.read(ctx, config.maxJsonBytes()), Wire.MakeDir.class);
    String path = Paths.check(req.path(), false);
    try {
      Exchange.json(ctx, 201, Wire.file(e.sandbox().files().mkdir(path)));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  /**
   * GET /v1/sandboxes/{id}/archive?path=P&path=Q&maxBytes=N: a tar of those workspace files (the
   * remote client's exports; it checks every entry and hashes what it receives itself).
   */
  public void archiveOut(Context ctx) {
    Registry.Entry e = entry(ctx);
    List<String> paths = ctx.queryParams("path");
    if (paths.isEmpty() || paths.size() > MAX_ARCHIVE_ENTRIES) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "an archive takes 1.." + MAX_ARCHIVE_ENTRIES + " 'path' parameters, got " + paths.size(),
          "name the files, e.g. ?path=out/a.csv&path=out/b.csv");
    }
    long max = config.maxBodyBytes();
    String asked = ctx.queryParam("maxBytes");
    if (asked != null) {
      try {
        max = Math.min(max, Long.parseLong(asked));
      } catch (NumberFormatException ex) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD, "maxBytes is not a number", "send e.g. maxBytes=1048576");
      }
    }
    List<String> checked = paths.stream().map(raw -> Paths.check(raw, false)).toList();
    try {
      Transfers.archive(ctx, e.sandbox().files(), checked, max);
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  /**
   * PUT /v1/sandboxes/{id}/archive?path=DIR: unpacks the tar body under DIR; the sandbox's own
   * checks of an uploaded archive apply (tar-slip, links, devices, sizes).
   */
  public void archiveIn(Context ctx) {
    Registry.Entry e = entry(ctx);
    String dir = Paths.check(ctx.queryParam("path"), true);
    Path tmp = Transfers.body(ctx, config.maxBodyBytes(), "an archive upload");
    try {
      List<Artifact> in = e.sandbox().uploadArchive(tmp, dir);
      Exchange.json(
          ctx,
          201,
          Map.of(
              "artifacts",
              in.stream()
                  .map(a -> new Wire.ArtifactView(a.path(), a.size(), a.sha256()))
                  .toList()));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    } finally {
      Transfers.deleteQuietly(tmp);
    }
  }

  public void download(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), false);
    try {
      Transfers.download(ctx, e.sandbox().files(), path, config.maxBodyBytes());
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  public void upload(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), false);
    try {
      Exchange.json(
          ctx,
          201,
          Wire.file(
              Transfers.upload(ctx, e.sandbox().files(), path, config.maxBodyBytes(), false)));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  private Registry.Entry entry(Context ctx) {
    return registry.get(Exchange.tenant(ctx).name(), ctx.pathParam("id"));
  }

  /** The sandbox as an answer to a change (create, fork, restore): no usage figures yet. */
  static Wire.SandboxView view(Registry.Entry e) {
    return view(e, engineLabels(e), null);
  }

  /**
   * The sandbox with the CPU and memory it uses (the last figure the engine gave), if known, and
   * its configured labels: the console's live list, which must not cost an engine request a row.
   */
  public Wire.SandboxView viewWithUsage(Registry.Entry e) {
    return view(e, e.sandbox().config().labels(), usage.get(e.sandbox()).orElse(null));
  }

  static Wire.SandboxView view(
      Registry.Entry e, Map<String, String> engineLabels, @Nullable ResourceUsage u) {
    Sandbox sb = e.sandbox();
    return new Wire.SandboxView(
        sb.id(),
        e.tenant(),
        e.image(),
        e.memoryBytes(),
        e.cpus(),
        e.created().toString(),
        sb.expiresAt().toString(),
        sb.config().runtime(),
        UserLabels.visible(engineLabels),
        u == null ? null : Math.round(u.cpus() * 1000) / 1000.0,
        u == null ? null : u.memoryBytes());
  }

  /**
   * The labels the engine holds for the sandbox (owner, expiry, the tenant's own): what any process
   * finds and reaps it by. Its configured labels when the engine cannot be asked.
   */
  private static Map<String, String> engineLabels(Registry.Entry e) {
    Sandbox sb = e.sandbox();
    try {
      return Backends.get(sb.config().backend())
          .inspect(sb.id())
          .map(SandboxInfo::labels)
          .orElse(sb.config().labels());
    } catch (RuntimeException unreachable) {
      return sb.config().labels();
    }
  }

  private static boolean wantsStream(Context ctx) {
    String accept = ctx.header("Accept");
    return accept != null && accept.contains("text/event-stream");
  }

  /**
   * Cancels a streamed execution of the sandbox by the id its {@code started} event gave; its
   * stream then ends with the result (limit {@code cancelled}). 404 once it has finished.
   */
  public void cancel(Context ctx) {
    Registry.Entry e = entry(ctx);
    Execution x = events.running(e.sandbox().id(), ctx.pathParam("execution"));
    if (x == null) {
      throw new ApiException(
          404,
          ErrorCode.NOT_FOUND,
          "no running execution '" + Escape.id(ctx.pathParam("execution")) + "' on this sandbox",
          "use the id of a streamed execution's 'started' event while it runs");
    }
    x.cancel();
    ctx.status(202);
  }

  @Override
  public void close() {
    events.close();
  }
}
