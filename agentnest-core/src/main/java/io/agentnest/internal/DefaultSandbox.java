package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.ApprovalPolicy;
import io.agentnest.Artifact;
import io.agentnest.Browser;
import io.agentnest.ConfigException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Exposed;
import io.agentnest.ForkReport;
import io.agentnest.Git;
import io.agentnest.PythonSession;
import io.agentnest.ResourceUsage;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxFiles;
import io.agentnest.SnapshotInfo;
import io.agentnest.TerminalSession;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.internal.approval.ApprovalGate;
import io.agentnest.internal.approval.PythonAsks;
import io.agentnest.internal.approval.PythonGuard;
import io.agentnest.internal.audit.Audit;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.audit.HostBudgets;
import io.agentnest.internal.browser.ChromiumBrowser;
import io.agentnest.internal.call.CallEngine;
import io.agentnest.internal.call.DefaultPythonSession;
import io.agentnest.internal.call.PtyTerminal;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.egress.EgressProxy;
import io.agentnest.internal.egress.Interception;
import io.agentnest.internal.egress.OperationCredentials;
import io.agentnest.internal.expose.PortForwards;
import io.agentnest.internal.files.ArtifactTransfer;
import io.agentnest.internal.files.DefaultSandboxFiles;
import io.agentnest.internal.files.SandboxArchives;
import io.agentnest.internal.git.SandboxGit;
import io.agentnest.internal.lifecycle.DeferredTask;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.internal.lifecycle.SandboxExpiry;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.secrets.RedactedViews;
import io.agentnest.internal.snapshot.SnapshotStore;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.DaemonThreads;
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
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Sandbox} implementation, a facade over the state its parts share (the channel, the
 * redactor, the approval gate, the budgets): launch is {@link SandboxLauncher}, calls are the
 * {@link CallEngine}, fork is {@link Forks} (one strategy per {@link ForkPath}), the network is
 * {@link SandboxEgress}, the TTL is {@link SandboxExpiry}; files, sessions and executions are their
 * own classes.
 *
 * <p>Why it is over 600 lines: it implements every method of {@link Sandbox} (about 45, each a
 * check and a hand-off to its part) and the destroy sequence that must see all of them; what is not
 * the facade lives elsewhere ({@link AgentHello}, the expiry, the snapshot statics in {@link
 * DefaultSandboxRuntime}).
 */
public final class DefaultSandbox implements Sandbox {
  private static final Logger LOG = LoggerFactory.getLogger(DefaultSandbox.class);

  /** How long destroy or detach waits for hand-out labels still being written. */
  private static final Duration LABEL_WAIT = Duration.ofSeconds(10);

  private static final Duration BROWSER_START = Duration.ofSeconds(30);

  private final RuntimeBackend backend;
  private volatile boolean attached;
  private final String id;
  private final SandboxConfig config;
  private final AgentChannel channel;
  private final DefaultSandboxFiles files;
  private final Map<String, DefaultPythonSession> sessions = new ConcurrentHashMap<>();
  private final AtomicBoolean destroyed = new AtomicBoolean();
  private final Redactor redactor;
  private final AuditLog audit;
  private final ApprovalGate gate;
  private final HostBudgets budgets;
  private final CallEngine calls;
  private final SandboxEgress egress;
  private final PortForwards forwards;
  private final SandboxExpiry expiry;
  private volatile @Nullable String destroyReason;
  private volatile @Nullable SandboxGit git;

  /**
   * A pooled sandbox's host state, labels and CPU weight, written a moment after its hand-out (see
   * {@link SandboxLauncher#FOLLOW_UP_DELAY}): destroy drops them if they have not begun, detach
   * writes them at once (another process reads them); both wait for a write under way, so none
   * races the sandbox's removal or reaches another process late.
   */
  private volatile @Nullable DeferredTask afterHandOut;

  /** Told once when this process lets the sandbox go (destroy or detach): its pool's slot. */
  private volatile @Nullable Runnable onRelease;

  DefaultSandbox(RuntimeBackend backend, String id, SandboxConfig config, AgentChannel channel) {
    this.backend = backend;
    this.id = id;
    this.config = config;
    this.channel = channel;
    Map<String, String> secrets = new LinkedHashMap<>();
    config.secretEnv().forEach((k, v) -> secrets.put(k, v.reveal()));
    // Credentials the proxy adds never enter the sandbox; masked all the same, should one come
    // back in some form the proxy could not see (e.g. a compressed response).
    config
        .network()
        .injections()
        .forEach(i -> secrets.putIfAbsent(i.header().secretName(), i.header().secret().reveal()));
    config
        .network()
        .placeholders()
        .forEach(p -> secrets.putIfAbsent(p.secretName(), p.secret().reveal()));
    this.redactor =
        config.redactCredentials() ? Redactor.of(secrets) : Redactor.secretsOnly(secrets);
    this.audit = Audit.of(config);
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
    PythonGuard pythonGuard = new PythonGuard(config.approvals());
    PythonAsks asks =
        new PythonAsks(
            channel,
            gate,
            pythonGuard,
            redactor,
            budgets.asks(),
            budgets.asksPerCall(),
            budgets.audit(),
            budgets.overBudget(Budget.Kind.APPROVAL_ASKS));
    this.calls =
        new CallEngine(
            id,
            config,
            channel,
            redactor,
            gate,
            pythonGuard,
            asks,
            budgets.audit(),
            this::checkUsable);
    this.files =
        new DefaultSandboxFiles(
            channel, redactor, (type, data) -> audit(type, data), this::checkDelete);
    this.egress = new SandboxEgress(id, config, channel, redactor, budgets);
    this.forwards =
        new PortForwards(
            channel,
            (type, data) -> audit(type, data),
            port -> !config.network().isNone() && port == SecurityPolicy.EGRESS_PORT);
    this.expiry =
        new SandboxExpiry(
            id, backend.name(), channel, Instant.now().plus(config.ttl()), this::expire);
  }

  /** Told once when this process lets the sandbox go (set by the pool's hand-out). */
  void onRelease(Runnable r) {
    onRelease = r;
  }

  /** Destroys with {@code why} as the audited reason (the process that owned it is exiting). */
  void destroyBecause(String why) {
    destroyReason = why;
    destroy();
  }

  private void released() {
    OwnedSandboxes.remove(this);
    Runnable r = onRelease;
    onRelease = null;
    if (r != null) {
      r.run();
    }
  }

  /** Its expiry: told to the agent, the host state and this process's reaper by the launcher. */
  SandboxExpiry expiry() {
    return expiry;
  }

  /** This handle attached to a running sandbox ({@code Sandbox.connect}) rather than made it. */
  void markAttached() {
    attached = true;
  }

  /**
   * Whether this handle attached to a sandbox it did not make: it cannot know the sandbox's secret
   * variables, so it never saves the sandbox's memory.
   */
  boolean attached() {
    return attached;
  }

  /**
   * The credentials host operations (git) have this sandbox's egress proxy add while they run;
   * empty when the sandbox has no network.
   */
  Optional<OperationCredentials> operationCredentials() {
    EgressProxy p = egress.proxy();
    return Optional.ofNullable(p == null ? null : p.operations());
  }

  void startEgress(@Nullable Interception interception) {
    egress.start(interception);
  }

  @Override
  public Instant expiresAt() {
    return expiry.expiresAt();
  }

  @Override
  public void extend(Duration more) {
    if (more.isNegative() || more.isZero()) {
      throw new ConfigException("extend() needs a positive duration, got " + more);
    }
    checkUsable();
    expiry.extend(more);
    audit(
        AuditEvent.SANDBOX_EXTENDED,
        Map.of("by_seconds", more.toSeconds(), "expires_at", expiry.expiresAt().toString()));
  }

  /** Called by the reaper at expiry. */
  public void expire() {
    channel.markExpired();
    if (!destroyed.get()) {
      audit("sandbox.expired", Map.of("expires_at", expiry.expiresAt().toString()));
    }
    destroy();
  }

  void audit(String type, Map<String, ?> data) {
    budgets.audit().record(type, data);
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
    return sessions.computeIfAbsent(name, n -> new DefaultPythonSession(calls, n));
  }

  @Override
  public ExecResult exec(String command) {
    return exec(command, ExecOptions.defaults());
  }

  @Override
  public ExecResult exec(String command, ExecOptions options) {
    return calls.run(CallEngine.shellRequest(command), options.stdin(), options, false);
  }

  @Override
  public ExecResult exec(List<String> argv, ExecOptions options) {
    return calls.run(CallEngine.argvRequest(argv), options.stdin(), options, false);
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

  @Override
  public Execution start(String command, ExecOptions options) {
    return calls.start(CallEngine.shellRequest(command), options.stdin(), options, false);
  }

  @Override
  public Execution start(List<String> argv, ExecOptions options) {
    return calls.start(CallEngine.argvRequest(argv), options.stdin(), options, false);
  }

  @Override
  public TerminalSession terminal(List<String> argv, int rows, int cols, ExecOptions options) {
    return PtyTerminal.start(calls, channel, argv, rows, cols, options);
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
  String redact(String reported) {
    return redactor.redact(reported, (r, n) -> {});
  }

  /** An error reply of the agent, with secrets masked: error text leaves the sandbox too. */
  AgentNestException agentError(JsonNode h) {
    return calls.agentError(h);
  }

  AgentChannel channel() {
    return channel;
  }

  /** tar streams in and out of this sandbox (fork, snapshots, artifacts, uploads). */
  SandboxArchives archives() {
    checkUsable();
    return new SandboxArchives(channel, id, redactor);
  }

  @Override
  public Browser browser() {
    checkUsable();
    return ChromiumBrowser.start(this, SecurityPolicy.EGRESS_PORT, BROWSER_START);
  }

  @Override
  public Git git() {
    checkUsable();
    SandboxGit g = git;
    if (g == null) {
      synchronized (this) {
        g = git;
        if (g == null) {
          g = new SandboxGit(context);
          git = g;
        }
      }
    }
    return g;
  }

  @Override
  public Exposed expose(int sandboxPort, int hostPort) {
    checkUsable();
    return forwards.expose(sandboxPort, hostPort);
  }

  void checkUsable() {
    if (channel.expired()) {
      throw new SandboxClosedException(
          "sandbox "
              + id
              + " expired (its TTL ran out at "
              + expiry.expiresAt()
              + "): create a new one, and call extend() before expiry to keep one longer");
    }
    if (destroyed.get()) {
      throw new SandboxClosedException(
          "sandbox " + id + " was destroyed: create a new one with Sandbox.create()");
    }
  }

  private volatile @Nullable ForkReport forkReport;

  private final SandboxContext context = new DefaultSandboxContext(this);

  /** The view of this sandbox its parts (state, snapshots, git, forks) work through. */
  public SandboxContext context() {
    return context;
  }

  // Spares and the fork paths live in the fork component; this facade only delegates.
  private final Forks forks = new Forks(this);

  @Override
  public void prepareForks(int n) {
    forks.prepare(n);
  }

  /** A spare taken for a fork starts its life now. */
  DefaultSandbox restartTtl() {
    expiry.restart(config.ttl());
    return this;
  }

  /** Starts the default session's interpreter, so that a fork's state load does not wait for it. */
  void warmDefaultSession() {
    channel.request(
        Json.object().put(Ops.OP, Ops.OP_PY_WARM).put("session", "default"),
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
  List<String> sessionNames() {
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
            channel.call(Json.object().put(Ops.OP, Ops.OP_PY_SESSIONS), new byte[0], x -> {}),
            Duration.ofSeconds(30),
            "list sessions");
    List<String> out = new ArrayList<>();
    if (f.ev().equals(Ops.EV_ERROR)) {
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

  @Override
  public SnapshotInfo snapshot(String name, boolean replace) {
    checkUsable();
    SnapshotInfo info = SnapshotStore.local().save(context, name, replace);
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
  public Optional<ResourceUsage> usage() {
    try {
      return backend.usage(id);
    } catch (RuntimeException e) {
      // A figure for a page, not a control: an engine that cannot answer just shows none.
      return Optional.empty();
    }
  }

  @Override
  public boolean isAlive() {
    return !destroyed.get() && channel.isAlive();
  }

  void afterHandOut(DeferredTask task) {
    afterHandOut = task;
  }

  @Override
  public void detach() {
    // Left running on purpose: the agent and 'prune' end it at its expiry, not this process.
    DeferredTask followUp = afterHandOut;
    if (followUp != null) {
      followUp.runNow(LABEL_WAIT);
    }
    expiry.detach();
    forwards.closeAll();
    channel.close();
    released();
  }

  @Override
  public void destroy() {
    if (destroyed.compareAndSet(false, true)) {
      DeferredTask followUp = afterHandOut;
      if (followUp != null) {
        followUp.drop(LABEL_WAIT);
      }
      forks.stop();
      expiry.cancel();
      String reason = destroyReason;
      // Open egress connections are closed and audited (bytes so far) before the last record.
      egress.close("sandbox " + id + " was " + (reason == null ? "destroyed" : reason));
      // Streak counts and folded denials go out before the sandbox's last record.
      budgets.close();
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
        forwards.closeAll();
        channel.close();
        released();
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
}
