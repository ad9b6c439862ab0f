package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.Artifact;
import io.agentnest.ConfigException;
import io.agentnest.ExecEvent.Finished;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.FileOperationException;
import io.agentnest.FileOperationException.Reason;
import io.agentnest.ForkReport;
import io.agentnest.NetworkEvent;
import io.agentnest.PythonSession;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxFiles;
import io.agentnest.SnapshotInfo;
import io.agentnest.UnsupportedControlException;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.internal.approval.ApprovalGate;
import io.agentnest.internal.approval.PythonAsks;
import io.agentnest.internal.approval.PythonGuard;
import io.agentnest.internal.approval.ShellClassifier;
import io.agentnest.internal.audit.Audit;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.audit.HostBudgets;
import io.agentnest.internal.audit.NetworkAudit;
import io.agentnest.internal.call.DefaultExecution;
import io.agentnest.internal.call.DefaultPythonSession;
import io.agentnest.internal.call.ExecFinishedAudit;
import io.agentnest.internal.call.OutputCollector;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.EgressTunnels;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.egress.EgressProxy;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.Resolver;
import io.agentnest.internal.files.ArtifactTransfer;
import io.agentnest.internal.files.DefaultSandboxFiles;
import io.agentnest.internal.lifecycle.ExpiryReaper;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.secrets.RedactedViews;
import io.agentnest.internal.snapshot.SnapshotStore;
import io.agentnest.internal.state.SandboxArchives;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.DaemonThreads;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Sandbox} implementation, a facade: launch is {@link SandboxLauncher}, fork is {@link
 * Forks} (one strategy per {@link ForkPath}), files, sessions and executions are their own classes.
 *
 * <p>Why it is still over 600 lines: the call engine (begin and track a call, approvals before it
 * starts, output caps and deadlines, the exec audit) still lives here, because it shares the
 * channel, the redactor, the guards and the budgets with every other method; it is the next
 * delegate to extract (issue 18), with the egress start and the expiry arming after it.
 */
public final class DefaultSandbox implements Sandbox {
  private static final Logger LOG = LoggerFactory.getLogger(DefaultSandbox.class);

  /** Time the agent gets beyond a call's own timeout to stop it (TERM, grace, KILL) and answer. */
  static final Duration ANSWER_MARGIN = Duration.ofSeconds(10);

  private final RuntimeBackend backend;
  private final String id;
  private final SandboxConfig config;
  private final AgentChannel channel;
  private final DefaultSandboxFiles files;
  private final Map<String, DefaultPythonSession> sessions = new ConcurrentHashMap<>();
  private final AtomicBoolean destroyed = new AtomicBoolean();
  private final Redactor redactor;
  private final AuditLog audit;
  private final ApprovalGate gate;
  private final PythonGuard pythonGuard;
  private final HostBudgets budgets;
  private final PythonAsks asks;
  private volatile Instant expiresAt;
  private volatile @Nullable String destroyReason;

  DefaultSandbox(RuntimeBackend backend, String id, SandboxConfig config, AgentChannel channel) {
    this.backend = backend;
    this.id = id;
    this.config = config;
    this.channel = channel;
    Map<String, String> secrets = new LinkedHashMap<>();
    config.secretEnv().forEach((k, v) -> secrets.put(k, v.reveal()));
    this.redactor =
        config.redactCredentials() ? Redactor.of(secrets) : Redactor.secretsOnly(secrets);
    AuditLog log = config.auditLog();
    this.audit = log != null ? log : Audit.shared();
    this.budgets =
        new HostBudgets(
            config.budgets(),
            (t, d) -> Audit.record(audit, t, id, RedactedViews.auditData(redactor, d)),
            this::destroyOverBudget,
            System::nanoTime);
    this.gate =
        new ApprovalGate(
            id,
            RedactedViews.approvals(redactor, config.approvalHandler()),
            config.approvals().timeout(),
            (t, d) -> audit(t, d));
    this.pythonGuard = new PythonGuard(config.approvals());
    this.asks =
        new PythonAsks(
            channel,
            gate,
            pythonGuard,
            redactor,
            budgets.asks(),
            budgets.asksPerCall(),
            budgets.audit(),
            budgets.overBudget(Budget.Kind.APPROVAL_ASKS));
    this.files =
        new DefaultSandboxFiles(
            channel, redactor, (type, data) -> audit(type, data), this::checkDelete);
    this.expiresAt = Instant.now().plus(config.ttl());
  }

  /** Creates a sandbox (see {@link SandboxLauncher#create}). */
  public static Sandbox create(SandboxConfig config) {
    return SandboxLauncher.create(config);
  }

  /** Reattaches to a running sandbox (see {@link SandboxLauncher#connect}). */
  public static Sandbox connect(RuntimeBackend backend, String idOrPrefix) {
    return SandboxLauncher.connect(backend, idOrPrefix);
  }

  /** A sandbox restored from another's checkpoint (see {@link SandboxLauncher#adoptRestored}). */
  public static DefaultSandbox adoptRestored(
      RuntimeBackend backend, BackendSandbox bs, SandboxConfig config, SandboxSpec spec) {
    return SandboxLauncher.adoptRestored(backend, bs, config, spec);
  }

  void setExpiresAt(Instant at) {
    expiresAt = at;
  }

  void setOwner(String owner) {
    this.owner = owner;
  }

  void startEgress() {
    if (config.network().isNone()) {
      return;
    }
    Resolver resolver = EgressResolvers.current();
    List<Consumer<NetworkEvent>> listeners = config.networkListeners();
    EgressProxy proxy =
        new EgressProxy(
            config.network(),
            resolver,
            redactedNetworkAudit(new NetworkAudit(budgets.audit(), config.networkListeners())),
            auditedApprovals(RedactedViews.approvals(redactor, config.approvalHandler())),
            id);
    EgressTunnels tunnels =
        new EgressTunnels(
            channel, proxy, budgets.tunnels(), budgets.overBudget(Budget.Kind.EGRESS_TUNNELS));
    channel.onTunnelFrames(tunnels);
    Frame f =
        channel.request(
            Json.object().put("op", "egress_listen").put("port", SecurityPolicy.EGRESS_PORT),
            new byte[0],
            Duration.ofSeconds(10));
    if (f.ev().equals("err")) {
      throw new UnsupportedControlException(
          "cannot start the egress proxy endpoint in the sandbox: "
              + Bounded.text(f.header().path("message").asText(), 500));
    }
    egress = tunnels;
  }

  private volatile @Nullable EgressTunnels egress;

  /** Every approval request and decision is audited: who, when, why, how long it waited. */
  private @Nullable ApprovalHandler auditedApprovals(@Nullable ApprovalHandler handler) {
    if (handler == null) {
      return null;
    }
    return req -> {
      long t0 = System.nanoTime();
      audit(
          "approval.requested",
          Map.of("kind", req.kind(), "target", req.target(), "detail", req.detail()));
      return handler
          .decide(req)
          .whenComplete(
              (d, err) -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("kind", req.kind());
                m.put("target", req.target());
                m.put("waited_ms", (System.nanoTime() - t0) / 1_000_000);
                if (d != null) {
                  m.put("allowed", d.allowed());
                  m.put("reason", d.reason());
                  m.put("decided_by", d.decidedBy());
                } else {
                  m.put("allowed", false);
                  m.put("reason", "handler failed: " + err);
                }
                audit("approval.decided", m);
              });
    };
  }

  /** Tells the agent, the host state and this process's reaper about the current expiry. */
  void arm() {
    arm(false);
  }

  /**
   * {@code reattached}: the agent keeps its own expiry when it is later (set by a handle in another
   * process or home, which this one does not know about).
   */
  void arm(boolean reattached) {
    channel.request(
        Json.object()
            .put("op", "set_ttl")
            .put("expires_at", expiresAt.getEpochSecond())
            .put("extend_only", reattached),
        new byte[0],
        Duration.ofSeconds(10));
    HostState.write(new HostState.Entry(id, backend.name(), owner, expiresAt));
    if (owner.equals(SecurityPolicy.ownerId())) {
      ExpiryReaper.schedule(this, expiresAt);
    } else {
      // Not ours: its owner, its agent and 'prune' end it; this handle's idea of the expiry may
      // be older than one set elsewhere, and must not destroy it early.
      ExpiryReaper.cancel(id);
    }
  }

  /** Who the host state names as owner: this process, or the one recorded before a reattach. */
  private volatile String owner = SecurityPolicy.ownerId();

  @Override
  public Instant expiresAt() {
    return expiresAt;
  }

  @Override
  public synchronized void extend(Duration more) {
    if (more.isNegative() || more.isZero()) {
      throw new ConfigException("extend() needs a positive duration, got " + more);
    }
    checkUsable();
    expiresAt = expiresAt.plus(more);
    arm();
  }

  /** Called by the reaper at expiry. */
  public void expire() {
    channel.markExpired();
    if (!destroyed.get()) {
      audit("sandbox.expired", Map.of("expires_at", expiresAt.toString()));
    }
    destroy();
  }

  public void audit(String type, Map<String, ?> data) {
    budgets.audit().record(type, data);
  }

  /** The host name is the sandbox's choice: a secret used as a DNS label is masked. */
  private Consumer<NetworkEvent> redactedNetworkAudit(NetworkAudit sink) {
    return attempt -> sink.accept(RedactedViews.networkEvent(redactor, attempt));
  }

  /**
   * The sandbox kept pressing past a budget: it is destroyed (on another thread: this runs on its
   * channel's reader).
   */
  private void destroyOverBudget(Budget.Kind kind) {
    String why =
        "destroyed: it kept asking for more "
            + kind.what
            + " than its budget allows; raise budgets in the configuration if that is legitimate";
    LOG.warn("sandbox {} {}", id, why);
    destroyReason = why;
    // Calls fail with why at once: anything that closes the channel before destroy() runs on its
    // own thread would otherwise name only a closed channel.
    channel.close("sandbox " + id + " was " + why);
    OVER_BUDGET.execute(this::destroy);
  }

  private static final ExecutorService OVER_BUDGET = DaemonThreads.pool("agentnest-over-budget");

  private void auditStart(ObjectNode h, byte[] payload, long callId) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("call", callId);
    String op = h.path("op").asText();
    if (op.equals("py")) {
      d.put("kind", "python");
      d.put("session", h.path("session").asText("default"));
      d.put(
          "code",
          redactor.redact(
              Bounded.text(new String(payload, StandardCharsets.UTF_8), 4096), (r, n) -> {}));
    } else {
      d.put("kind", "shell");
      String cmd = h.has("argv") ? h.path("argv").toString() : h.path("cmd").asText();
      d.put("command", redactor.redact(Bounded.text(cmd, 4096), (r, n) -> {}));
      d.put("cwd", h.path("cwd").asText());
    }
    d.put("timeout_ms", h.path("timeout_ms").asLong());
    audit("exec.started", d);
  }

  private void auditFinish(long callId, @Nullable ExecResult r, @Nullable Throwable failure) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("call", callId);
    d.put(
        "error",
        failure == null
            ? "unknown"
            : redactor.redact(String.valueOf(failure.getMessage()), (x, n) -> {}));
    audit("exec.finished", d);
  }

  private void auditFinished(Call c, ExecResult r, JsonNode res) {
    audit("exec.finished", ExecFinishedAudit.finished(c.id, r, res, c.clock.elapsed()));
    if (r.limit() != null) {
      audit("limit.hit", ExecFinishedAudit.limitHit(c.id, r, res));
    }
    if (!r.redactions().isEmpty()) {
      audit("secret.redacted", Map.of("call", c.id, "rules", r.redactions()));
    }
  }

  void hello() {
    Frame f =
        channel.request(Json.object().put("op", "hello"), new byte[0], Duration.ofSeconds(10));
    if (!f.ev().equals("res")) {
      throw new AgentNestException("agent refused hello: " + f.header());
    }
    LOG.debug("sandbox {} agent {}", id, f.header());
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public SandboxConfig config() {
    return config;
  }

  @Override
  public ExecResult runCode(String code) {
    return pythonSession("default").run(code);
  }

  @Override
  public ExecResult runCode(String code, ExecOptions options) {
    return pythonSession("default").run(code, options);
  }

  @Override
  public PythonSession pythonSession(String name) {
    if (!name.matches("[A-Za-z0-9_.-]{1,64}")) {
      throw new ConfigException(
          "session name '" + name + "' is invalid: use 1-64 letters, digits, '_', '.', '-'");
    }
    return sessions.computeIfAbsent(name, n -> new DefaultPythonSession(this, n));
  }

  @Override
  public ExecResult exec(String command) {
    return exec(command, ExecOptions.defaults());
  }

  @Override
  public ExecResult exec(String command, ExecOptions options) {
    ObjectNode h = Json.object().put("op", "exec").put("cmd", command);
    return run(h, options.stdin(), options, false);
  }

  @Override
  public ExecResult exec(List<String> argv, ExecOptions options) {
    return run(argvRequest(argv), options.stdin(), options, false);
  }

  /** An exec request for a program with explicit arguments, no shell involved. */
  private static ObjectNode argvRequest(List<String> argv) {
    if (argv.isEmpty()) {
      throw new ConfigException("argv is empty: give at least the program to run");
    }
    ObjectNode h = Json.object().put("op", "exec");
    argv.forEach(h.putArray("argv")::add);
    return h;
  }

  public ExecResult run(ObjectNode h, byte[] payload, ExecOptions options, boolean python) {
    if (!python) {
      checkUsable();
      ShellClassifier.Verdict v = shellVerdict(h);
      gate.require(v.kind(), commandText(h), "shell command", v.action(), v.reason());
    }
    Call c = begin(h, payload, options, python, null);
    try {
      Frame f = channel.await(c.done, c.clock::deadlineNanos, h.path("op").asText());
      if (f.ev().equals("err")) {
        throw agentError(f.header());
      }
      ExecResult r = c.collector.toResult(f.header(), python);
      auditFinished(c, r, f.header());
      return r;
    } catch (RuntimeException e) {
      auditFinish(c.id, null, e);
      throw e;
    }
  }

  /** A started call: its final frame's future, the collector of its output, its clock. */
  private record Call(
      long id, CompletableFuture<Frame> done, OutputCollector collector, CallClock clock) {}

  /**
   * A call's deadline: its timeout plus the answer margin, stopped while the sandbox waits for an
   * approval (time a person takes does not count against the call).
   */
  public static final class CallClock {
    private final long start = System.nanoTime();
    private final long budget;
    private final long askBudget;
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicLong paused = new AtomicLong();

    CallClock(Duration timeout, Duration approvalTimeout) {
      this.budget = timeout.plus(ANSWER_MARGIN).toNanos();
      this.askBudget = approvalTimeout.plus(ANSWER_MARGIN).toNanos();
    }

    /** Wall time since the request, by the host's clock. */
    Duration elapsed() {
      return Duration.ofNanos(System.nanoTime() - start);
    }

    long deadlineNanos() {
      long d = start + budget + paused.get();
      return open.get() > 0 ? Math.max(d, System.nanoTime() + askBudget) : d;
    }

    public long askStarted() {
      open.incrementAndGet();
      return System.nanoTime();
    }

    public void askEnded(long t0) {
      paused.addAndGet(System.nanoTime() - t0);
      open.decrementAndGet();
    }
  }

  /** What the approval policy says about a shell (or argv) request. */
  private ShellClassifier.Verdict shellVerdict(ObjectNode h) {
    return ShellClassifier.classify(commandText(h), config.approvals());
  }

  private static String commandText(ObjectNode h) {
    if (h.has("argv")) {
      List<String> words = new ArrayList<>();
      h.path("argv").forEach(a -> words.add(shellQuote(a.asText())));
      return String.join(" ", words);
    }
    return h.path("cmd").asText();
  }

  private static String shellQuote(String word) {
    return word.matches("[A-Za-z0-9_./:=@%+,-]+") ? word : "'" + word.replace("'", "'\\''") + "'";
  }

  /** The file API asks before deleting, as the policy says. */
  private void checkDelete(String path, boolean recursive) {
    ApprovalPolicy p = config.approvals();
    gate.require(
        "file.delete",
        SandboxConfig.WORKSPACE + "/" + path,
        recursive ? "files().deleteRecursive" : "files().delete",
        p.fileDeletion(),
        "file deletion");
  }

  private Call begin(
      ObjectNode h,
      byte[] payload,
      ExecOptions options,
      boolean python,
      @Nullable DefaultExecution events) {
    checkUsable();
    Duration timeout = options.timeout() != null ? options.timeout() : config.execTimeout();
    long maxOut =
        options.maxOutputBytes() != null ? options.maxOutputBytes() : config.maxOutputBytes();
    h.put("timeout_ms", Math.max(1, timeout.toMillis())).put("max_output", maxOut);
    if (!python) {
      h.put("cwd", options.workdir() != null ? options.workdir() : config.workdir());
      if (!options.env().isEmpty()) {
        ObjectNode env = h.putObject("env");
        options.env().forEach(env::put);
      }
    }
    CallClock clock = new CallClock(timeout, config.approvals().timeout());
    ObjectNode watch = python ? pythonGuard.watch() : null;
    if (watch != null) {
      h.set("watch", watch);
      h.put("approval_timeout_ms", config.approvals().timeout().toMillis());
    }
    OutputCollector collector = new OutputCollector(maxOut, options.onOutput(), redactor, events);
    long callId = channel.newId();
    PythonAsks.Call questions = asks.forCall(callId, clock);
    Consumer<Frame> frames =
        watch == null
            ? collector
            : fr -> {
              if (fr.ev().equals("ask")) {
                questions.onAsk(fr);
              } else {
                collector.accept(fr);
              }
            };
    h.put("id", callId);
    auditStart(h, payload, callId);
    CompletableFuture<Frame> done = channel.callWithId(h, payload, frames);
    return new Call(callId, done, collector, clock);
  }

  /** Starts a call whose events stream into an {@link io.agentnest.Execution}. */
  public DefaultExecution start(ObjectNode h, byte[] payload, ExecOptions options, boolean python) {
    DefaultExecution ex = new DefaultExecution(options.streamBuffer(), options.backpressure());
    if (python) {
      startInto(ex, h, payload, options, true);
      return ex;
    }
    checkUsable();
    ShellClassifier.Verdict v = shellVerdict(h);
    if (v.action() == ApprovalPolicy.Action.ALLOW) {
      startInto(ex, h, payload, options, false);
      return ex;
    }
    String cmd = commandText(h);
    // The caller gets its Execution at once; the command starts when (and if) it is approved.
    gate.decide(v.kind(), cmd, "shell command", v.action(), v.reason())
        .whenComplete(
            (d, err) -> {
              if (ex.result().isDone()) {
                return;
              }
              if (d == null || !d.allowed()) {
                ex.fail(
                    ApprovalGate.denial(
                        v.kind(),
                        cmd,
                        v.reason(),
                        d != null
                            ? d
                            : new ApprovalDecision(false, "approval failed: " + err, "error")));
                return;
              }
              try {
                startInto(ex, h, payload, options, false);
              } catch (RuntimeException e) {
                ex.fail(e);
              }
            });
    return ex;
  }

  private void startInto(
      DefaultExecution ex, ObjectNode h, byte[] payload, ExecOptions options, boolean python) {
    Call c = begin(h, payload, options, python, ex);
    ex.onCancel(() -> signal(c.id, "CANCELLED"));
    withDeadline(c.done, c.clock)
        .whenComplete(
            (f, err) -> {
              if (err != null) {
                Throwable cause =
                    err instanceof TimeoutException
                        ? new AgentNestException(
                            "the agent of sandbox "
                                + id
                                + " did not answer within its timeout plus "
                                + ANSWER_MARGIN.toMillis()
                                + " ms; the sandbox may be overloaded or stuck")
                        : err;
                channel.abandon(c.id);
                auditFinish(c.id, null, cause);
                ex.fail(cause);
                return;
              }
              if (f.ev().equals("err")) {
                ex.fail(agentError(f.header()));
                return;
              }
              try {
                ex.accept(new Finished(c.collector.toResult(f.header(), python)));
              } catch (RuntimeException e) {
                ex.fail(e);
              }
            });
  }

  /** {@code done}, or a timeout once the call's clock runs out (re-read as approvals pause it). */
  private static CompletableFuture<Frame> withDeadline(
      CompletableFuture<Frame> done, CallClock clock) {
    CompletableFuture<Frame> out = new CompletableFuture<>();
    done.whenComplete(
        (f, e) -> {
          if (e != null) {
            out.completeExceptionally(e);
          } else {
            out.complete(f);
          }
        });
    checkDeadline(out, clock);
    return out;
  }

  private static void checkDeadline(CompletableFuture<Frame> out, CallClock clock) {
    if (out.isDone()) {
      return;
    }
    long wait = clock.deadlineNanos() - System.nanoTime();
    if (wait <= 0) {
      out.completeExceptionally(new TimeoutException());
      return;
    }
    CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS)
        .execute(() -> checkDeadline(out, clock));
  }

  /** Asks the agent to stop a running call; best effort, never blocks the caller long. */
  void signal(long callId, String limit) {
    if (!channel.isAlive()) {
      return;
    }
    try {
      channel.call(
          Json.object().put("op", "signal").put("target", callId).put("limit", limit),
          new byte[0],
          f -> {});
    } catch (RuntimeException e) {
      LOG.debug("could not signal call {} of {}", callId, id, e);
    }
  }

  @Override
  public Execution start(String command, ExecOptions options) {
    return start(
        Json.object().put("op", "exec").put("cmd", command), options.stdin(), options, false);
  }

  @Override
  public Execution start(List<String> argv, ExecOptions options) {
    return start(argvRequest(argv), options.stdin(), options, false);
  }

  @Override
  public Execution startCode(String code, ExecOptions options) {
    return pythonSession("default").start(code, options);
  }

  @Override
  public CompletableFuture<ExecResult> execAsync(String command, ExecOptions options) {
    return start(command, options).result();
  }

  @Override
  public CompletableFuture<ExecResult> runCodeAsync(String code, ExecOptions options) {
    return startCode(code, options).result();
  }

  /** Text the sandbox reported (a name, a reason), with secrets masked before anyone reads it. */
  public String redact(String reported) {
    return redactor.redact(reported, (r, n) -> {});
  }

  /** An error reply of the agent, with secrets masked: error text leaves the sandbox too. */
  public AgentNestException agentError(JsonNode h) {
    String code = Bounded.text(h.path("code").asText("AGENT"), 64);
    String msg =
        redactor.redact(Bounded.text(h.path("message").asText("(no message)"), 4096), (r, n) -> {});
    if (code.equals("BAD_PATH")) {
      return new FileOperationException(Reason.BAD_PATH, msg);
    }
    return new AgentNestException("sandbox agent error " + code + ": " + msg);
  }

  public AgentChannel channel() {
    return channel;
  }

  /** tar streams in and out of this sandbox (fork, snapshots, artifacts, uploads). */
  public SandboxArchives archives() {
    checkUsable();
    return new SandboxArchives(channel, id, redactor);
  }

  public void checkUsable() {
    if (channel.expired()) {
      throw new SandboxClosedException(
          "sandbox "
              + id
              + " expired (its TTL ran out at "
              + expiresAt
              + "): create a new one, and call extend() before expiry to keep one longer");
    }
    if (destroyed.get()) {
      throw new SandboxClosedException(
          "sandbox " + id + " was destroyed: create a new one with Sandbox.create()");
    }
  }

  private volatile @Nullable ForkReport forkReport;

  // Spares and the fork paths live in the fork component; this facade only delegates.
  private final Forks forks = new Forks(this);

  @Override
  public void prepareForks(int n) {
    forks.prepare(n);
  }

  /** A spare taken for a fork starts its life now. */
  synchronized DefaultSandbox restartTtl() {
    expiresAt = Instant.now().plus(config.ttl());
    arm();
    return this;
  }

  /** Starts the default session's interpreter, so that a fork's state load does not wait for it. */
  void warmDefaultSession() {
    channel.request(
        Json.object().put("op", "py_warm").put("session", "default"),
        new byte[0],
        Duration.ofSeconds(30));
  }

  @Override
  public Sandbox fork() {
    return fork(1).get(0);
  }

  @Override
  public List<Sandbox> fork(int n) {
    return forks.fork(n);
  }

  void setForkReport(ForkReport report) {
    forkReport = report;
  }

  RuntimeBackend backend() {
    return backend;
  }

  boolean isDestroyed() {
    return destroyed.get();
  }

  /** The Python sessions this sandbox may have started. */
  public List<String> sessionNames() {
    Set<String> names = new LinkedHashSet<>();
    names.add("default");
    names.addAll(sessions.keySet());
    names.addAll(liveSessions());
    return names.stream().limit(SandboxState.MAX_SESSIONS).toList();
  }

  /**
   * The sessions with a running interpreter, as the agent reports them: also those another process
   * started (a CLI snapshot of a sandbox an application runs). Untrusted: names are checked and
   * their number capped; an agent without the operation reports none.
   */
  private List<String> liveSessions() {
    Frame f =
        channel.await(
            channel.call(Json.object().put("op", "py_sessions"), new byte[0], x -> {}),
            Duration.ofSeconds(30),
            "list sessions");
    List<String> out = new ArrayList<>();
    if (f.ev().equals("err")) {
      return out;
    }
    for (JsonNode n : f.header().path("sessions")) {
      String name = n.asText("");
      if (out.size() < SandboxState.MAX_SESSIONS && SandboxState.validSessionName(name)) {
        out.add(name);
      }
    }
    return out;
  }

  @Override
  public Optional<ForkReport> forkReport() {
    return Optional.ofNullable(forkReport);
  }

  /** Entry points of {@link Sandbox}'s snapshot statics (the API reaches internal only here). */
  public static Sandbox restoreSnapshot(String name, @Nullable SandboxConfig config) {
    return SnapshotStore.local().restore(name, config);
  }

  public static List<SnapshotInfo> snapshots() {
    return SnapshotStore.local().list();
  }

  public static boolean removeSnapshot(String name) {
    SnapshotStore store = SnapshotStore.local();
    // The audit record is about the sandbox the snapshot was taken of ("unknown" when its
    // manifest does not verify: a tampered snapshot can still be removed).
    String source = store.sourceSandbox(name).orElse("unknown");
    boolean removed = store.remove(name);
    if (removed) {
      try {
        Audit.record(Audit.shared(), AuditEvent.SNAPSHOT_REMOVED, source, Map.of("snapshot", name));
      } catch (RuntimeException e) {
        LOG.warn("snapshot {} removed, but the audit log is not writable: {}", name, e.toString());
      }
    }
    return removed;
  }

  @Override
  public SnapshotInfo snapshot(String name, boolean replace) {
    checkUsable();
    SnapshotInfo info = SnapshotStore.local().save(this, name, replace);
    audit(
        AuditEvent.SNAPSHOT_SAVED,
        Map.of(
            "snapshot",
            name,
            "bytes",
            info.bytes(),
            "sessions",
            info.sessions().size(),
            "image_id",
            info.imageId()));
    return info;
  }

  private ArtifactTransfer transfer() {
    return new ArtifactTransfer(
        archives(),
        files(),
        ArtifactTransfer.DEFAULT_MAX_BYTES,
        ArtifactTransfer.DEFAULT_MAX_ENTRIES);
  }

  @Override
  public List<Artifact> artifacts(String glob) {
    return transfer().list(glob);
  }

  @Override
  public List<Artifact> exportArtifacts(String glob, Path hostDir) {
    List<Artifact> out = transfer().export(glob, hostDir);
    audit("artifacts.exported", Map.of("pattern", glob, "files", out.size()));
    return out;
  }

  @Override
  public List<Artifact> upload(Path hostPath, String sandboxPath) {
    List<Artifact> out = transfer().upload(hostPath, sandboxPath);
    audit("files.uploaded", Map.of("path", sandboxPath, "files", out.size()));
    return out;
  }

  @Override
  public List<Artifact> uploadArchive(Path tarFile, String sandboxPath) {
    List<Artifact> out = transfer().uploadArchive(tarFile, sandboxPath);
    audit("files.uploaded", Map.of("path", sandboxPath, "files", out.size()));
    return out;
  }

  @Override
  public SandboxFiles files() {
    checkUsable();
    return files;
  }

  @Override
  public boolean isAlive() {
    return !destroyed.get() && channel.isAlive();
  }

  @Override
  public void detach() {
    // Left running on purpose: the agent and 'prune' end it at its expiry, not this process (whose
    // idea of the expiry may be older than one set elsewhere).
    ExpiryReaper.cancel(id);
    if (owner.equals(SecurityPolicy.ownerId())) {
      owner = HostState.DETACHED;
      HostState.write(new HostState.Entry(id, backend.name(), owner, expiresAt));
    }
    channel.close();
  }

  @Override
  public void destroy() {
    if (destroyed.compareAndSet(false, true)) {
      forks.stop();
      ExpiryReaper.cancel(id);
      // Streak counts and folded denials go out before the sandbox's last record.
      budgets.close();
      String reason = destroyReason;
      audit(
          "sandbox.destroyed",
          reason == null
              ? Map.of("expired", channel.expired())
              : Map.of("expired", false, "reason", reason));
      if (reason != null) {
        // Before the container goes: its calls then fail with why, not "the agent exited".
        channel.close("sandbox " + id + " was " + reason);
      }
      try {
        backend.destroy(id);
        HostState.delete(id);
      } finally {
        EgressTunnels t = egress;
        if (t != null) {
          t.closeAll();
        }
        channel.close();
      }
    }
  }

  @Override
  public void close() {
    destroy();
  }

  @Override
  public String toString() {
    return "Sandbox[" + id.substring(0, Math.min(12, id.length())) + ", " + config.image() + "]";
  }

  public static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
