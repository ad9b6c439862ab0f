package io.agentnest.server;

import io.agentnest.ApprovalPolicy;
import io.agentnest.Artifact;
import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.FileInfo;
import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.ResourceUsage;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.Secret;
import io.agentnest.spi.Backends;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** The sandbox routes: lifecycle, exec and code (plain or server-sent events), files. */
final class SandboxApi implements AutoCloseable {
  static final String TENANT = "agentnest.tenant";

  /** Set on a request of the admin console: lists and approvals span every tenant. */
  static final String ADMIN = "agentnest.admin";

  /** The label naming a sandbox's tenant: written by the server at create, read on adoption. */
  static final String TENANT_LABEL = "agentnest-server/tenant";

  /** The label naming the tenant store of the server that made it ({@link TenantStore#storeId}). */
  static final String STORE_LABEL = "agentnest-server/store";

  private static final Pattern SESSION = Pattern.compile("[A-Za-z0-9_-]{1,32}");
  private static final int MAX_SESSIONS = 16;
  private static final long KEEPALIVE_SECONDS = 5;

  /** The most files one archive request names. */
  static final int MAX_ARCHIVE_ENTRIES = 10_000;

  /** The most output one call may ask to keep (the sandbox's own limit may be lower). */
  static final long MAX_OUTPUT_BYTES = 64L << 20;

  private final ServerConfig config;
  private final Registry registry;
  private final Function<SandboxConfig, Sandbox> creator;
  private final Clock clock;
  private final String storeId;
  private final ApprovalFloor floor;
  private final ExecutionQuota executions = new ExecutionQuota(System::nanoTime);
  private final ExecutionTaps taps;

  /** Streamed executions while they run, by sandbox id + "/" + execution id (for cancel). */
  private final Map<String, Execution> streaming = new ConcurrentHashMap<>();

  private final OpenStreams streams;

  private final UsageCache usage = new UsageCache(System::currentTimeMillis);
  private final ScheduledExecutorService keepalive =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "agentnest-server-keepalive");
            t.setDaemon(true);
            return t;
          });

  /**
   * Where keep-alive comments are written: the scheduler above only hands them out, so a stream
   * whose client does not read blocks its own writer, never another tenant's keep-alives.
   */
  private final ThreadPoolExecutor pings =
      StreamThreads.pool("agentnest-server-ping", StreamThreads.MAX_PINGS);

  SandboxApi(
      ServerConfig config,
      Registry registry,
      Function<SandboxConfig, Sandbox> creator,
      Clock clock,
      String storeId,
      ApprovalQueue approvals,
      OpenStreams streams) {
    this.streams = streams;
    this.storeId = storeId;
    this.floor = new ApprovalFloor(config, approvals);
    this.config = config;
    this.registry = registry;
    this.creator = creator;
    this.clock = clock;
    this.taps = new ExecutionTaps(clock);
  }

  /** The approvals floor and handler every sandbox of a tenant gets (create, restore, adopt). */
  ApprovalFloor floor() {
    return floor;
  }

  /** The recent executions the console watches. */
  ExecutionTaps taps() {
    return taps;
  }

  static Tenant tenant(Context ctx) {
    Tenant t = ctx.attribute(TENANT);
    if (t == null) {
      throw new IllegalStateException("route reached without authentication");
    }
    return t;
  }

  static boolean admin(Context ctx) {
    return Boolean.TRUE.equals(ctx.attribute(ADMIN));
  }

  void whoami(Context ctx) {
    Tenant t = tenant(ctx);
    AgentNestServer.json(
        ctx,
        200,
        new Wire.TenantView(
            t.name(),
            t.maxSandboxes(),
            t.memoryBytes(),
            t.cpus(),
            t.requestsPerSecond(),
            t.executionsPerMinute(),
            registry.usage(t.name()),
            executions.used(t.name()),
            ApproverRole.role(ctx).label(),
            config.policy().approverRoleRequired() || t.approverRoleRequired()));
  }

  void create(Context ctx) {
    Tenant t = tenant(ctx);
    Wire.CreateSandbox req = Wire.read(body(ctx, config.maxJsonBytes()), Wire.CreateSandbox.class);
    AgentNestServer.json(ctx, 201, view(create(t, req)));
  }

  /**
   * Makes a sandbox for {@code t} under the server's policy narrowed by the tenant's, within the
   * tenant's quota, and registers it: the one way every API (ours, E2B's) makes a sandbox.
   */
  Registry.Entry create(Tenant t, Wire.CreateSandbox req) {
    Policies.Effective p = Policies.effective(config.policy(), t);
    String image = req.image() == null ? config.policy().defaultImage() : req.image();
    long memory =
        req.memoryBytes() == null ? Math.min(512L << 20, p.maxMemoryBytes()) : req.memoryBytes();
    double cpus = req.cpus() == null ? Math.min(1.0, p.maxCpus()) : req.cpus();
    Duration ttl =
        req.ttlSeconds() == null
            ? Policies.min(config.policy().defaultTtl(), p.maxTtl())
            : Duration.ofSeconds(req.ttlSeconds());
    List<String> hosts = req.allowHosts() == null ? List.of() : req.allowHosts();
    p.check(image, memory, cpus, ttl, hosts);
    p.checkRuntime(req.runtime());
    Map<String, String> labels = UserLabels.check(req.labels());
    SandboxConfig.Builder b =
        SandboxConfig.builder()
            .image(image)
            .memoryBytes(memory)
            .cpus(cpus)
            .ttl(ttl)
            .tenant(t.name())
            .label(TENANT_LABEL, t.name())
            .label(STORE_LABEL, storeId);
    labels.forEach(b::label);
    b.pidsLimit(p.pids(req.pidsLimit(), SandboxConfig.defaults().pidsLimit()));
    // tmp and the workspace are memory-backed: neither may be larger than a sandbox may use
    if (req.tmpSizeBytes() != null) {
      b.tmpSizeBytes(p.checkSize("tmpSizeBytes", req.tmpSizeBytes()));
    }
    if (req.workspaceSizeBytes() != null) {
      b.workspaceSizeBytes(p.checkSize("workspaceSizeBytes", req.workspaceSizeBytes()));
    }
    if (req.runtime() != null && !req.runtime().equals("runc")) {
      b.runtime(req.runtime());
    }
    if (req.env() != null) {
      b.env(req.env());
    }
    if (req.secretEnv() != null) {
      // Masked in everything the sandbox prints, as the Java API's secretEnv is.
      try {
        req.secretEnv().forEach((k, v) -> b.secretEnv(k, Secret.named(k, v)));
      } catch (RuntimeException e) {
        throw Failures.of(e);
      }
    }
    List<Wire.Credential> credentials = req.credentials() == null ? List.of() : req.credentials();
    boolean ask = Boolean.TRUE.equals(req.askUnknownHosts());
    if (ask) {
      p.checkAsk();
    }
    if (!hosts.isEmpty() || ask) {
      NetworkPolicy.Builder n = NetworkPolicy.builder().allow(hosts);
      p.allowAddresses().forEach(n::allowAddress);
      if (ask) {
        n.onUnknownHost(NetworkPolicy.Mode.ASK);
      }
      try {
        credentials.forEach(c -> credential(n, c));
        b.network(n.build());
      } catch (RuntimeException e) {
        throw Failures.of(e);
      }
    } else if (!credentials.isEmpty()) {
      throw new ApiException(
          422,
          ErrorCode.INVALID_FIELD,
          "credentials name hosts the sandbox may not reach: allowHosts is empty",
          "list each credential's host in allowHosts too",
          Map.of("field", "credentials"));
    }
    // What the request asks for can add to the server's and the tenant's floor, never loosen it.
    ApprovalPolicy asked =
        req.approvals() == null ? ApprovalPolicy.none() : ApprovalRules.fromWire(req.approvals());
    ApprovalFloor.Applied applied = floor.apply(t, asked, ask);
    if (applied.policy() != null) {
      b.approvals(applied.policy());
    }
    b.approvalHandler(applied.handler());
    SandboxConfig sc;
    try {
      sc = b.build();
    } catch (RuntimeException e) {
      throw Failures.of(e);
    }
    taps.retain(registry);
    usage.retain(registry);
    Registry.Reservation r = registry.reserve(t, memory, cpus);
    Sandbox sb;
    try {
      sb = creator.apply(sc);
    } catch (RuntimeException e) {
      registry.release(r);
      throw Failures.of(e);
    }
    Registry.Entry entry =
        new Registry.Entry(
            t.name(), sb, image, memory, cpus, clock.instant(), ConcurrentHashMap.newKeySet());
    registry.commit(r, entry);
    return entry;
  }

  /** One {@code credentials} entry onto the network policy: a header, or a placeholder. */
  static void credential(NetworkPolicy.Builder n, Wire.Credential c) {
    String host = c.host();
    String own = c.name();
    String value = c.value();
    if (host == null || own == null || value == null) {
      throw new ApiException(
          422,
          ErrorCode.INVALID_FIELD,
          "a credential needs host, name and value",
          "send {host, name, value, header or placeholder: true}",
          Map.of("field", "credentials"));
    }
    boolean placeholder = Boolean.TRUE.equals(c.placeholder());
    String header = c.header();
    if (placeholder == (header != null)) {
      throw new ApiException(
          422,
          ErrorCode.INVALID_FIELD,
          "credential for " + Escape.id(host) + " needs exactly one of header and placeholder",
          "send header: \"Authorization: Bearer ${secret:NAME}\", or placeholder: true",
          Map.of("field", "credentials"));
    }
    Secret secret = Secret.named(own, value);
    if (header == null) {
      n.placeholder(host, own, secret);
      return;
    }
    // The header may name only the credential's own secret: never a variable of the server's.
    n.inject(
        host,
        Header.parse(
            header,
            name -> {
              if (!name.equals(own)) {
                throw new ApiException(
                    422,
                    ErrorCode.INVALID_FIELD,
                    "credential header names ${secret:"
                        + Escape.id(name)
                        + "}, not the credential's own "
                        + Escape.id(own),
                    "name the credential's own secret in its header",
                    Map.of("field", "credentials"));
              }
              return secret;
            }));
  }

  void list(Context ctx) {
    List<Wire.SandboxView> out = new ArrayList<>();
    usage.retain(registry);
    List<Registry.Entry> entries = admin(ctx) ? registry.all() : registry.list(tenant(ctx).name());
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
    AgentNestServer.json(ctx, 200, Map.of("sandboxes", out));
  }

  void get(Context ctx) {
    Registry.Entry e = entry(ctx);
    AgentNestServer.json(ctx, 200, view(e, engineLabels(e), usage.get(e.sandbox()).orElse(null)));
  }

  void destroy(Context ctx) {
    Registry.Entry e = entry(ctx);
    registry.remove(e.sandbox().id());
    ctx.status(204);
  }

  void extend(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.Extend req = Wire.read(body(ctx, config.maxJsonBytes()), Wire.Extend.class);
    long most = Policies.effective(config.policy(), tenant(ctx)).maxTtl().toSeconds();
    // Above max_ttl no extension can be allowed; checked first so that a huge number never
    // reaches the time arithmetic (it overflowed into a 500).
    if (req.seconds() <= 0 || req.seconds() > most) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "seconds must be in 1.." + most + " (the max_ttl), got " + req.seconds(),
          "send e.g. {\"seconds\": 600}");
    }
    extend(tenant(ctx), e, req.seconds());
    AgentNestServer.json(ctx, 200, view(e));
  }

  /** Extends by {@code seconds} unless the whole lifetime would pass the policy's max_ttl. */
  void extend(Tenant t, Registry.Entry e, long seconds) {
    Policies.Effective p = Policies.effective(config.policy(), t);
    Duration lived = Duration.between(e.created(), e.sandbox().expiresAt());
    if (seconds > p.maxTtl().toSeconds() || lived.plusSeconds(seconds).compareTo(p.maxTtl()) > 0) {
      Duration total =
          seconds > p.maxTtl().toSeconds() ? p.maxTtl().plusSeconds(1) : lived.plusSeconds(seconds);
      throw new ApiException(
          422,
          ErrorCode.POLICY,
          "extending by "
              + seconds
              + "s makes the lifetime "
              + total
              + ", over max_ttl "
              + p.maxTtl(),
          "extend by less, or create a new sandbox");
    }
    try {
      e.sandbox().extend(Duration.ofSeconds(seconds));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  /** Counts one execution against the tenant's per-minute bound (429 past it). */
  void countExecution(Tenant t) {
    executions.acquire(t);
  }

  /**
   * A checked exec or code request with its options and console tap: run it, or start it. {@code
   * keepOnLeave}: whether a streamed run goes on when its client leaves (its timeout still
   * applies).
   */
  record Call(
      Supplier<ExecResult> runner,
      Supplier<Execution> starter,
      ExecutionTaps.Run tap,
      boolean keepOnLeave,
      long maxOutput) {
    ExecResult run() {
      return runner.get();
    }

    Execution start() {
      return starter.get();
    }
  }

  void exec(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.Exec req = Wire.read(body(ctx, config.maxJsonBytes()), Wire.Exec.class);
    answer(ctx, e, exec(tenant(ctx), e, req));
  }

  void code(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.Code req = Wire.read(body(ctx, config.maxJsonBytes()), Wire.Code.class);
    answer(ctx, e, code(tenant(ctx), e, req));
  }

  private void answer(Context ctx, Registry.Entry e, Call call) {
    if (wantsStream(ctx)) {
      stream(ctx, e.sandbox().id(), start(call), call.keepOnLeave());
    } else {
      // A whole result is held until it is written: its output bound is reserved first.
      MemoryBudget.reserve(ctx, call.maxOutput(), "an execution's output");
      AgentNestServer.json(ctx, 200, Wire.result(run(call)));
    }
  }

  static ExecResult run(Call call) {
    ExecResult r;
    try {
      r = call.run();
    } catch (RuntimeException ex) {
      call.tap().finish(null, ex);
      throw Failures.of(ex);
    }
    call.tap().finish(r, null);
    return r;
  }

  static Execution start(Call call) {
    Execution ex;
    try {
      ex = call.start();
    } catch (RuntimeException failed) {
      call.tap().finish(null, failed);
      throw Failures.of(failed);
    }
    ex.result().whenComplete(call.tap()::finish);
    return ex;
  }

  /** Checks an exec request against the tenant's executions quota and the bounds. */
  Call exec(Tenant t, Registry.Entry e, Wire.Exec req) {
    executions.acquire(t);
    if ((req.command() == null) == (req.argv() == null)) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "give exactly one of 'command' (a shell command) and 'argv' (a program and arguments)",
          "send {\"command\": \"ls -la\"} or {\"argv\": [\"ls\", \"-la\"]}");
    }
    if (req.argv() != null && req.argv().isEmpty()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, "argv is empty", "name a program, e.g. [\"ls\", \"-la\"]");
    }
    ExecOptions.Builder o = ExecOptions.builder();
    timeout(o, req.timeoutSeconds());
    if (req.workdir() != null) {
      o.workdir(req.workdir());
    }
    if (req.env() != null) {
      o.env(req.env());
    }
    if (req.stdin() != null) {
      o.stdin(req.stdin().getBytes(StandardCharsets.UTF_8));
    }
    maxOutput(o, req.maxOutputBytes());
    Sandbox sb = e.sandbox();
    String cmd = req.command();
    List<String> argv = req.argv() == null ? List.of() : List.copyOf(req.argv());
    ExecutionTaps.Run run = taps.start(sb.id(), "exec", cmd != null ? cmd : String.join(" ", argv));
    o.onOutput(run::output);
    ExecOptions opts = options(o);
    return new Call(
        () -> cmd != null ? sb.exec(cmd, opts) : sb.exec(argv, opts),
        () -> cmd != null ? sb.start(cmd, opts) : sb.start(argv, opts),
        run,
        req.onDisconnect() == Wire.OnDisconnect.CONTINUE,
        outputBound(sb, opts));
  }

  /** Checks a Python request against the quotas (executions, sessions) and the bounds. */
  Call code(Tenant t, Registry.Entry e, Wire.Code req) {
    executions.acquire(t);
    ExecOptions.Builder o = ExecOptions.builder();
    timeout(o, req.timeoutSeconds());
    maxOutput(o, req.maxOutputBytes());
    String session = req.session();
    if (session != null) {
      if (!SESSION.matcher(session).matches()) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "session '" + Escape.id(session) + "' is invalid",
            "use 1-32 letters, digits, '_' or '-'");
      }
      if (!e.sessions().contains(session) && e.sessions().size() >= MAX_SESSIONS) {
        throw new ApiException(
            429,
            ErrorCode.QUOTA,
            "quota 'sessions' is full: limit " + MAX_SESSIONS,
            "reuse a session name",
            Map.of("quota", "sessions", "limit", MAX_SESSIONS, "used", e.sessions().size()));
      }
      e.sessions().add(session);
    }
    ExecutionTaps.Run run = taps.start(e.sandbox().id(), "code", req.code());
    o.onOutput(run::output);
    ExecOptions opts = options(o);
    Sandbox sb = e.sandbox();
    String code = req.code();
    return new Call(
        () -> session == null ? sb.runCode(code, opts) : sb.pythonSession(session).run(code, opts),
        () ->
            session == null
                ? sb.startCode(code, opts)
                : sb.pythonSession(session).start(code, opts),
        run,
        req.onDisconnect() == Wire.OnDisconnect.CONTINUE,
        outputBound(sb, opts));
  }

  void listFiles(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), true);
    boolean recursive = "true".equals(ctx.queryParam("recursive"));
    try {
      List<FileInfo> files =
          recursive ? e.sandbox().files().listRecursive(path) : e.sandbox().files().list(path);
      AgentNestServer.json(ctx, 200, Map.of("files", files.stream().map(Wire::file).toList()));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  void deleteFile(Context ctx) {
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

  void mkdir(Context ctx) {
    Registry.Entry e = entry(ctx);
    Wire.MakeDir req = Wire.read(body(ctx, config.maxJsonBytes()), Wire.MakeDir.class);
    String path = Paths.check(req.path(), false);
    try {
      AgentNestServer.json(ctx, 201, Wire.file(e.sandbox().files().mkdir(path)));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  /**
   * GET /v1/sandboxes/{id}/archive?path=P&path=Q&maxBytes=N: a tar of those workspace files (the
   * remote client's exports; it checks every entry and hashes what it receives itself).
   */
  void archiveOut(Context ctx) {
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
  void archiveIn(Context ctx) {
    Registry.Entry e = entry(ctx);
    String dir = Paths.check(ctx.queryParam("path"), true);
    Path tmp = Transfers.body(ctx, config.maxBodyBytes(), "an archive upload");
    try {
      List<Artifact> in = e.sandbox().uploadArchive(tmp, dir);
      AgentNestServer.json(
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

  void download(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), false);
    try {
      Transfers.download(ctx, e.sandbox().files(), path, config.maxBodyBytes());
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  void upload(Context ctx) {
    Registry.Entry e = entry(ctx);
    String path = Paths.check(ctx.queryParam("path"), false);
    try {
      AgentNestServer.json(
          ctx,
          201,
          Wire.file(
              Transfers.upload(ctx, e.sandbox().files(), path, config.maxBodyBytes(), false)));
    } catch (RuntimeException ex) {
      throw Failures.of(ex);
    }
  }

  private Registry.Entry entry(Context ctx) {
    return registry.get(tenant(ctx).name(), ctx.pathParam("id"));
  }

  /** The sandbox as an answer to a change (create, fork, restore): no usage figures yet. */
  static Wire.SandboxView view(Registry.Entry e) {
    return view(e, engineLabels(e), null);
  }

  /**
   * The sandbox with the CPU and memory it uses (the last figure the engine gave), if known, and
   * its configured labels: the console's live list, which must not cost an engine request a row.
   */
  Wire.SandboxView viewWithUsage(Registry.Entry e) {
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

  private static void timeout(ExecOptions.Builder o, @Nullable Long seconds) {
    if (seconds == null) {
      return;
    }
    if (seconds <= 0 || seconds > 3600) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "timeoutSeconds must be in 1..3600, got " + seconds,
          "send e.g. {\"timeoutSeconds\": 30}");
    }
    o.timeout(Duration.ofSeconds(seconds));
  }

  private static void maxOutput(ExecOptions.Builder o, @Nullable Long bytes) {
    if (bytes == null) {
      return;
    }
    if (bytes <= 0 || bytes > MAX_OUTPUT_BYTES) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "maxOutputBytes must be in 1.." + MAX_OUTPUT_BYTES + ", got " + bytes,
          "send e.g. {\"maxOutputBytes\": 65536}");
    }
    o.maxOutputBytes(bytes);
  }

  /** The most output a call keeps: its own bound, else its sandbox's. */
  private static long outputBound(Sandbox sb, ExecOptions opts) {
    Long asked = opts.maxOutputBytes();
    return asked != null ? asked : sb.config().maxOutputBytes();
  }

  private static ExecOptions options(ExecOptions.Builder o) {
    try {
      return o.build();
    } catch (RuntimeException e) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, String.valueOf(e.getMessage()), "fix the field");
    }
  }

  private static boolean wantsStream(Context ctx) {
    String accept = ctx.header("Accept");
    return accept != null && accept.contains("text/event-stream");
  }

  /**
   * Sends an execution as server-sent events: {@code stdout}/{@code stderr} chunks, {@code
   * truncated}, then one {@code result}. A client that goes away cancels the execution: the next
   * write (output or the keep-alive comment every few seconds) fails and the command is stopped.
   */
  private void stream(Context ctx, String sandboxId, Execution execution, boolean keepOnLeave) {
    String executionId = "x-" + Tokens.random().substring(0, 16);
    String key = sandboxId + "/" + executionId;
    streaming.put(key, execution);
    try {
      writeEvents(ctx, executionId, execution, keepOnLeave);
    } finally {
      streaming.remove(key);
    }
  }

  /**
   * Cancels a streamed execution of the sandbox by the id its {@code started} event gave; its
   * stream then ends with the result (limit {@code cancelled}). 404 once it has finished.
   */
  void cancel(Context ctx) {
    Registry.Entry e = entry(ctx);
    Execution x = streaming.get(e.sandbox().id() + "/" + ctx.pathParam("execution"));
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

  /**
   * Writes the events; when the client is gone (a write fails) the execution is cancelled, or, with
   * {@code keepOnLeave}, runs on to its end with its events dropped here (the console's tap and the
   * audit still see it; its timeout still bounds it).
   */
  private void writeEvents(
      Context ctx, String executionId, Execution execution, boolean keepOnLeave) {
    ctx.status(200);
    ctx.contentType("text/event-stream");
    ctx.header("Cache-Control", "no-store");
    ctx.header("X-Accel-Buffering", "no");
    ReentrantLock lock = new ReentrantLock();
    AtomicBoolean gone = new AtomicBoolean();
    AtomicBoolean pinging = new AtomicBoolean();
    AtomicBoolean revoked = new AtomicBoolean();
    Runnable leave =
        () -> {
          gone.set(true);
          if (!keepOnLeave) {
            execution.cancel();
          }
        };
    OutputStream out;
    try {
      out = ctx.res().getOutputStream();
    } catch (IOException e) {
      leave.run();
      drain(execution, keepOnLeave);
      return;
    }
    Runnable pingOnce =
        () -> {
          // A stream busy writing (or blocked on its client) needs no keep-alive.
          if (!lock.tryLock()) {
            pinging.set(false);
            return;
          }
          try {
            if (!gone.get()) {
              out.write(": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII));
              out.flush();
            }
          } catch (IOException | RuntimeException e) {
            leave.run();
          } finally {
            lock.unlock();
            pinging.set(false);
          }
        };
    // The key that opened the stream is checked while it runs: revoked, the execution stops and
    // nothing more of it is sent (the checker's thread never writes: a client that does not read
    // cannot hold it).
    OpenStreams.Watch watch =
        streams.watch(
            ctx.attribute(ApproverRole.KEY_ID),
            () -> {
              revoked.set(true);
              gone.set(true);
              execution.cancel();
            });
    ScheduledFuture<?> ping =
        keepalive.scheduleAtFixedRate(
            () -> {
              // At most one keep-alive of this stream in flight; a full pool skips this one.
              if (gone.get() || !pinging.compareAndSet(false, true)) {
                return;
              }
              try {
                pings.execute(pingOnce);
              } catch (RejectedExecutionException full) {
                pinging.set(false);
              }
            },
            KEEPALIVE_SECONDS,
            KEEPALIVE_SECONDS,
            TimeUnit.SECONDS);
    try {
      write(
          lock,
          out,
          gone,
          leave,
          ("event: started\ndata: {\"execution\":\"" + executionId + "\"}\n\n")
              .getBytes(StandardCharsets.US_ASCII));
      for (ExecEvent ev : execution) {
        Wire.Event event = Wire.event(ev);
        if (event == null || gone.get()) {
          continue;
        }
        write(
            lock,
            out,
            gone,
            leave,
            ("event: "
                    + event.name()
                    + "\ndata: "
                    + new String(Wire.write(event.data()), StandardCharsets.UTF_8)
                    + "\n\n")
                .getBytes(StandardCharsets.UTF_8));
      }
    } catch (RuntimeException e) {
      // The execution failed after its stream began (a refused approval, a lost sandbox): the
      // client gets the same error it would get without a stream, as a last event, not a stream
      // that just stops.
      write(lock, out, gone, leave, errorEvent(e));
      leave.run();
      drain(execution, keepOnLeave);
    } finally {
      ping.cancel(false);
      watch.close();
    }
    if (revoked.get()) {
      writeRevoked(lock, out);
    }
  }

  /** The last event of a stream whose key was revoked while it ran. */
  private static void writeRevoked(ReentrantLock lock, OutputStream out) {
    ApiException e =
        new ApiException(
            401,
            ErrorCode.KEY_REVOKED,
            "the API key that opened this stream was revoked (or expired) while it ran: the"
                + " execution was stopped",
            "ask the operator for a new key (`agentnest tenant key NAME`)");
    lock.lock();
    try {
      out.write(
          ("event: error\ndata: "
                  + new String(Wire.write(Wire.error(e)), StandardCharsets.UTF_8)
                  + "\n\n")
              .getBytes(StandardCharsets.UTF_8));
      out.flush();
    } catch (IOException | RuntimeException gone) {
      // the client left too
    } finally {
      lock.unlock();
    }
  }

  /** An {@code error} event: the error body of the failure, with the status it would have had. */
  static byte[] errorEvent(RuntimeException failure) {
    ApiException api = failure instanceof ApiException a ? a : Failures.of(failure);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", api.status());
    body.put("code", api.code().wire());
    body.put("message", api.getMessage());
    body.put("fix", api.fix());
    body.putAll(api.details());
    return ("event: error\ndata: " + new String(Wire.write(body), StandardCharsets.UTF_8) + "\n\n")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static void write(
      ReentrantLock lock, OutputStream out, AtomicBoolean gone, Runnable leave, byte[] frame) {
    lock.lock();
    try {
      if (gone.get()) {
        return;
      }
      out.write(frame);
      out.flush();
    } catch (IOException | RuntimeException e) {
      leave.run();
    } finally {
      lock.unlock();
    }
  }

  /** Takes a left execution's remaining events so that it runs on to its end (bounded by it). */
  private static void drain(Execution execution, boolean keepOnLeave) {
    if (!keepOnLeave) {
      return;
    }
    try {
      for (ExecEvent ignored : execution) {
        // dropped: nobody reads them
      }
    } catch (RuntimeException ended) {
      // the execution failed or was stopped: nothing more to take
    }
  }

  /**
   * Reads the body up to {@code max} bytes; a declared or actual larger body is a 413 naming the
   * bound, before more is read.
   */
  static byte[] body(Context ctx, long max) {
    refuseDeclaredOver(ctx, max);
    long declared = ctx.req().getContentLengthLong();
    MemoryBudget.reserve(ctx, declared >= 0 ? declared : max, "a request body");
    try (InputStream in = ctx.req().getInputStream()) {
      byte[] data = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, max + 1));
      if (data.length > max) {
        throw tooLarge(data.length, max);
      }
      return data;
    } catch (IOException e) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON, "the body could not be read: " + e.getMessage(), "send again");
    }
  }

  /** A 413 naming the bound when the body declares more than {@code max} bytes. */
  static void refuseDeclaredOver(Context ctx, long max) {
    if (declaredOver(ctx, max)) {
      throw tooLarge(ctx.req().getContentLengthLong(), max);
    }
  }

  /**
   * Whether the body declares more than {@code max} bytes; one not much over the bound is read (and
   * dropped) first, so that the caller's refusal reaches the client: closing with it unread resets
   * the connection while the client still sends, and the client then sees no answer at all. Larger
   * ones are not read.
   */
  static boolean declaredOver(Context ctx, long max) {
    long declared = ctx.req().getContentLengthLong();
    if (declared <= max) {
      return false;
    }
    if (declared - max <= DRAIN_BYTES) {
      try (InputStream in = ctx.req().getInputStream()) {
        in.skipNBytes(declared);
      } catch (IOException e) {
        // the client went away: nobody reads the answer either
      }
    }
    return true;
  }

  /**
   * How far over its bound a declared body is still read before the 413 ({@link #declaredOver}).
   */
  private static final long DRAIN_BYTES = 1L << 20;

  static ApiException tooLarge(long size, long max) {
    return new ApiException(
        413,
        ErrorCode.BODY_TOO_LARGE,
        "the request body is " + (size > max ? "over " : "") + max + " bytes, the server's bound",
        "send at most " + max + " bytes (files: split them; JSON: the server's max_json)",
        Map.of("limit", max));
  }

  @Override
  public void close() {
    keepalive.shutdownNow();
    pings.shutdownNow();
    usage.close();
  }
}
