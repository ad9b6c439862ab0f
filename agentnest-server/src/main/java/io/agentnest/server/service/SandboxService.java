package io.agentnest.server.service;

import io.agentnest.ApprovalPolicy;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Header;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.Secret;
import io.agentnest.server.approvals.ApprovalQueue;
import io.agentnest.server.config.ApprovalRules;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * What a tenant may do with sandboxes, whichever face asks ({@code /v1}, E2B, the WebSocket exec,
 * the console): create within the policy and the quota, extend within max_ttl, and exec and code
 * within the executions quota and the bounds, each recorded for the console. The faces read their
 * own requests and write their own answers; the decisions are made here once.
 */
public final class SandboxService implements AutoCloseable {
  /** The label naming a sandbox's tenant: written by the server at create, read on adoption. */
  public static final String TENANT_LABEL = "agentnest-server/tenant";

  /** The label naming the tenant store of the server that made it ({@link TenantStore#storeId}). */
  public static final String STORE_LABEL = "agentnest-server/store";

  /** The most output one call may ask to keep (the sandbox's own limit may be lower). */
  static final long MAX_OUTPUT_BYTES = 64L << 20;

  private static final Pattern SESSION = Pattern.compile("[A-Za-z0-9_-]{1,32}");
  private static final int MAX_SESSIONS = 16;

  private final ServerConfig config;
  private final Registry registry;
  private final Function<SandboxConfig, Sandbox> creator;
  private final Clock clock;
  private final String storeId;
  private final ApprovalFloor floor;
  private final ExecutionQuota executions;
  private final ExecutionTaps taps;
  private final UsageCache usage = new UsageCache(System::currentTimeMillis);

  /** Sees every egress attempt of the sandboxes this service makes (the server's metrics). */
  private volatile Consumer<NetworkEvent> networkEvents = e -> {};

  public SandboxService(
      ServerConfig config,
      Registry registry,
      Function<SandboxConfig, Sandbox> creator,
      Clock clock,
      String storeId,
      ApprovalQueue approvals) {
    this.config = config;
    this.registry = registry;
    this.creator = creator;
    this.clock = clock;
    this.storeId = storeId;
    this.floor = new ApprovalFloor(config, approvals);
    this.executions = new ExecutionQuota(System::nanoTime, registry::ledger, clock);
    this.taps = new ExecutionTaps(clock);
  }

  /** The approvals floor and handler every sandbox of a tenant gets (create, restore, adopt). */
  public ApprovalFloor floor() {
    return floor;
  }

  /** The recent executions the console watches. */
  public ExecutionTaps taps() {
    return taps;
  }

  /**
   * The sandboxes' CPU and memory in use, sampled in the background (views of /v1 and the console).
   */
  public UsageCache usage() {
    return usage;
  }

  /** Has {@code listener} see every egress attempt of the sandboxes made from now on. */
  public void onNetworkEvent(Consumer<NetworkEvent> listener) {
    networkEvents = listener;
  }

  /** Executions of {@code tenant} in the current minute. */
  public int executionsUsed(String tenant) {
    return executions.used(tenant);
  }

  /**
   * Makes a sandbox for {@code t} under the server's policy narrowed by the tenant's, within the
   * tenant's quota, and registers it: the one way every API (ours, E2B's) makes a sandbox.
   */
  public Registry.Entry create(Tenant t, Wire.CreateSandbox req) {
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
    Map<SandboxLimit, RequestedLimits.Asked> limits = RequestedLimits.read(req);
    RequestedLimits.Asked pids = limits.remove(SandboxLimit.PIDS);
    b.pidsLimit(
        pids == null
            ? p.pids(null, SandboxConfig.defaults().pidsLimit())
            : p.pids(pids.value(), pids.field(), pids.value()));
    limits.forEach(
        (l, asked) ->
            b.limit(
                l,
                // Sizes are of memory-backed filesystems: none may be larger than a sandbox may
                // use.
                l.unit() == SandboxLimit.Unit.BYTES
                    ? p.checkSize(asked.field(), asked.value())
                    : asked.value()));
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
    b.onNetworkEvent(networkEvents);
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

  /** Extends by {@code seconds} unless the whole lifetime would pass the policy's max_ttl. */
  public void extend(Tenant t, Registry.Entry e, long seconds) {
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
    registry.extended(e);
  }

  /** Counts one execution against the tenant's per-minute bound (429 past it). */
  public void countExecution(Tenant t) {
    executions.acquire(t);
  }

  /**
   * A checked exec or code request with its options and console tap: run it, or start it. {@code
   * keepOnLeave}: whether a streamed run goes on when its client leaves (its timeout still
   * applies).
   */
  public record Call(
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

  public static ExecResult run(Call call) {
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

  public static Execution start(Call call) {
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
  public Call exec(Tenant t, Registry.Entry e, Wire.Exec req) {
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
  public Call code(Tenant t, Registry.Entry e, Wire.Code req) {
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

  @Override
  public void close() {
    usage.close();
  }
}
