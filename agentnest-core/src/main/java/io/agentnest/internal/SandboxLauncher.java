package io.agentnest.internal;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ImageNotFoundException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.agent.AgentBytecode;
import io.agentnest.agent.AgentSources;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.internal.audit.Audit;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.context.FailedStart;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.context.SandboxStarts;
import io.agentnest.internal.egress.Interception;
import io.agentnest.internal.lifecycle.DeferredTask;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.internal.lifecycle.SandboxExpiry;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.secrets.SecretDelivery;
import io.agentnest.internal.snapshot.ConfigCodec;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.AgentNestHome;
import io.agentnest.spi.support.DaemonThreads;
import io.agentnest.spi.support.StartTrace;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The launcher behind {@link DefaultSandbox}: creates a sandbox, reattaches to one, adopts one
 * restored from a checkpoint, and arms its expiry from what the host wrote (labels, host state).
 */
final class SandboxLauncher {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxLauncher.class);

  /** Writes pooled sandboxes' hand-out labels (see {@link #handOut}). */
  private static final ExecutorService LABELS = DaemonThreads.pool("agentnest-labels");

  private SandboxLauncher() {}

  /** The start paths as the parts that start sandboxes (snapshot restore, pools) are given them. */
  static final SandboxStarts STARTS =
      new SandboxStarts() {
        @Override
        public SandboxContext create(SandboxConfig config) {
          return SandboxLauncher.create(config).context();
        }

        @Override
        public Optional<SandboxContext> fromCheckpoint(
            RuntimeBackend backend, SandboxConfig config, Path checkpoint) {
          SandboxSpec spec = SecurityPolicy.specFor(config);
          return backend
              .createFromCheckpoint(spec, checkpoint)
              .map(bs -> SandboxLauncher.adoptRestored(backend, bs, config, spec).context());
        }

        @Override
        public Sandbox handOut(
            RuntimeBackend backend,
            BackendSandbox bs,
            AgentChannel channel,
            SandboxConfig config,
            String pool,
            boolean restoreCpuShares,
            Runnable onRelease) {
          DefaultSandbox sb =
              SandboxLauncher.handOut(
                  backend, bs, channel, config, pool, restoreCpuShares, FOLLOW_UP_DELAY);
          sb.onRelease(onRelease);
          return sb;
        }

        @Override
        public void requireAuditRoom(SandboxConfig config) {
          SandboxLauncher.requireAuditRoom(config);
        }
      };

  /**
   * Creates a sandbox: policy to spec, container, bootstrap and secrets over the channel, then
   * {@link #ready}. Whatever fails, the container is destroyed.
   */
  static DefaultSandbox create(SandboxConfig config) {
    AgentBytecode.prepare(AgentNestHome.dir().resolve("cache"));
    requireAuditRoom(config);
    RuntimeBackend backend = Backends.get(config.backend());
    SandboxSpec spec = SecurityPolicy.specFor(config);
    Interception interception = interceptionFor(config);
    SecretDelivery secrets =
        SecretDelivery.of(config, interception == null ? Map.of() : interception.placeholderEnv());
    StartTrace.mark("policy");
    BackendSandbox bs = backend.create(spec);
    AgentChannel channel = null;
    try {
      channel = new AgentChannel(bs);
      channel.sendRaw(AgentSources.bootstrapPayload());
      secrets.send(channel);
      StartTrace.mark("bootstrap and secrets sent");
      try {
        channel.awaitReady(config.startTimeout());
        StartTrace.mark("agent ready");
      } catch (SandboxClosedException e) {
        String diag = bs.diagnostics();
        if (diag.contains("python3") || diag.contains("executable file not found")) {
          throw new ImageNotFoundException(
              "image '"
                  + config.image()
                  + "' cannot run the AgentNest agent: it has no python3 ("
                  + diag.strip()
                  + "); use an image with python3, e.g. "
                  + SandboxConfig.DEFAULT_IMAGE);
        }
        throw e;
      }
      return ready(backend, bs, channel, config, spec, false, interception);
    } catch (RuntimeException | Error e) {
      FailedStart.discard(backend, bs, channel, e);
      throw e;
    }
  }

  /**
   * The sandbox's CA and placeholders when its policy has credential rules: the CA outlives the TTL
   * by a week, since the TTL can be extended.
   */
  private static @Nullable Interception interceptionFor(SandboxConfig config) {
    return Interception.forPolicy(
            config.network(), "sandbox", config.ttl().plus(Duration.ofDays(7)))
        .orElse(null);
  }

  /** No sandbox starts while its actions could not be audited (the audit disk is full). */
  static void requireAuditRoom(SandboxConfig config) {
    AuditLog log = Audit.of(config);
    try {
      log.requireRoom();
    } catch (UncheckedIOException e) {
      throw new AgentNestException(
          "no sandbox is created while its actions cannot be audited: " + e.getMessage(), e);
    }
  }

  /** The sandbox on a channel whose agent answers: policy, egress, TTL armed, creation audited. */
  static DefaultSandbox ready(
      RuntimeBackend backend,
      BackendSandbox bs,
      AgentChannel channel,
      SandboxConfig config,
      SandboxSpec spec,
      boolean fromCheckpoint,
      @Nullable Interception interception) {
    DefaultSandbox sb = new DefaultSandbox(backend, bs.id(), config, channel);
    StartTrace.mark("host objects");
    AgentHello.exchange(sb.channel(), sb.id());
    StartTrace.mark("hello");
    sb.startEgress(interception);
    sb.expiry().setExpiresAt(labelExpiry(spec.labels()).orElse(sb.expiresAt()));
    sb.expiry().arm(false);
    // Made here: this process's to destroy when it exits (a connected handle never is).
    OwnedSandboxes.add(sb);
    StartTrace.mark("egress and expiry armed");
    Map<String, Object> created = auditData(config, sb);
    if (fromCheckpoint) {
      created.put("from_checkpoint", true);
    }
    sb.audit("sandbox.created", created);
    StartTrace.mark("audited");
    return sb;
  }

  /**
   * Hands a pooled sandbox to its user: the agent of {@code bs} has started and waits for its first
   * frame, so nothing has run in it. Its secrets and plain environment go in that frame, its TTL
   * starts now (in this process and in the agent), and the hand-out is audited as {@code
   * sandbox.acquired}. {@code followUpDelay} later ({@link #FOLLOW_UP_DELAY}) the host state and
   * the labels (where the backend can change them) get that TTL, and a member that waited at a low
   * CPU weight ({@code restoreCpuShares}) gets the usual one back. The caller destroys the sandbox
   * when this throws.
   */
  static DefaultSandbox handOut(
      RuntimeBackend backend,
      BackendSandbox bs,
      AgentChannel channel,
      SandboxConfig config,
      String pool,
      boolean restoreCpuShares,
      Duration followUpDelay) {
    // The room for its audit records was checked by the pool's precheck, a moment ago.
    Interception interception = interceptionFor(config);
    StartTrace.mark("hand-out: policy");
    // Greeted and told its expiry right behind its first frame, all three in one write (see
    // AgentChannel.cork), then built while the agent takes them: their answers come back with
    // the agent's ready, and the host objects (a few ms until the JIT has compiled them) cost no
    // round trip. The expiry is now + the user's TTL, never the idle member's label.
    Instant expiresAt = Instant.now().plus(config.ttl());
    CompletableFuture<Frame> hello;
    CompletableFuture<Frame> expiry;
    channel.cork();
    try {
      SecretDelivery.forHandOut(
              config, interception == null ? Map.of() : interception.placeholderEnv())
          .send(channel);
      hello = AgentHello.send(channel);
      expiry = SandboxExpiry.tellAgent(channel, expiresAt, false);
    } finally {
      channel.uncork();
    }
    StartTrace.mark("hand-out: init, hello, expiry sent");
    DefaultSandbox sb = new DefaultSandbox(backend, bs.id(), config, channel);
    sb.expiry().setExpiresAt(expiresAt);
    OwnedSandboxes.add(sb);
    StartTrace.mark("hand-out: host objects");
    // Audited while the agent takes its frames, not after its answers: the host waited idle for
    // them about a millisecond on gVisor, and the record half of one. A hand-out that fails from
    // here on says so in a second record, so the trail never shows a sandbox acquired that no
    // user got and nothing ended.
    Map<String, Object> acquired = auditData(config, sb);
    acquired.put("pool", pool);
    sb.audit(AuditEvent.SANDBOX_ACQUIRED, acquired);
    StartTrace.mark("hand-out: audited");
    try {
      channel.awaitReady(config.startTimeout());
      StartTrace.mark("hand-out: agent ready");
      AgentHello.await(sb.channel(), hello, sb.id());
      StartTrace.mark("hand-out: hello");
      sb.startEgress(interception);
      StartTrace.mark("hand-out: egress");
      sb.expiry().armInProcess(expiry);
      StartTrace.mark("hand-out: expiry armed");
    } catch (RuntimeException | Error e) {
      sb.audit(
          AuditEvent.SANDBOX_DESTROYED,
          Map.of("expired", false, "reason", "hand-out failed: " + e));
      throw e;
    }
    // Last: a hand-out that failed before here leaves nothing to write for a sandbox that is gone.
    sb.afterHandOut(
        DeferredTask.schedule(
            () -> afterHandOut(backend, sb, pool, restoreCpuShares), followUpDelay, LABELS));
    return sb;
  }

  /**
   * How long after a hand-out its host state, labels and CPU weight are written. Nothing waits on
   * them for safety (below), and each costs the host: the host state is a file written and renamed
   * (about a millisecond here), a Docker update of the CPU weight a request through dockerd,
   * containerd and a runc process (a few ms of a small host's CPU), a Kubernetes label write an API
   * server round trip (50-150 ms on the test cluster). Done at once, they ran beside the user's
   * first calls and made each of the first three about 2 ms slower (`agentnest bench --only pool
   * --trace`, runc: first / second / third result 4.2 / 3.9 / 3.7 ms p50 against 2.6 / 2.0 / 1.9 ms
   * with them a quarter second later). A sandbox destroyed before then skips them.
   */
  static final Duration FOLLOW_UP_DELAY = Duration.ofMillis(250);

  /**
   * A pooled sandbox's host state, labels and CPU weight after its hand-out (see {@link
   * #FOLLOW_UP_DELAY}). Nothing waits on them for safety: the agent holds the user's TTL and this
   * process's reaper ends the sandbox at it (both armed at hand-out). Until they land, the member's
   * labels still name this process as owner and the member's expiry (minutes away: the pool
   * replaces a member well before it), so a prune elsewhere leaves the sandbox alone while this
   * process lives, as it did the member; {@code ls} shows it as idle for that moment. Until the CPU
   * weight goes back up the user's first calls run at the member's low weight, which only matters
   * under contention. The host state and the labels carry the expiry of when they are written, so
   * an early extend() is not undone.
   */
  private static void afterHandOut(
      RuntimeBackend backend, DefaultSandbox sb, String pool, boolean restoreCpuShares) {
    String id = sb.id();
    sb.expiry().recordState();
    if (restoreCpuShares) {
      try {
        backend.setCpuShares(id, SandboxSpec.DEFAULT_CPU_SHARES);
      } catch (RuntimeException e) {
        LOG.warn(
            "pool {}: cannot give sandbox {} its CPU weight back ({}); it keeps the low"
                + " weight of a waiting member, which only matters under contention",
            pool,
            id,
            e.toString());
      }
    }
    Map<String, String> labels = new LinkedHashMap<>();
    labels.put(Labels.OWNER, SecurityPolicy.ownerId());
    labels.put(Labels.OWNER_PID, Long.toString(ProcessHandle.current().pid()));
    labels.put(Labels.OWNER_HOST, SecurityPolicy.hostName());
    labels.put(Labels.EXPIRES, Long.toString(sb.expiresAt().getEpochSecond()));
    labels.put(Labels.POOL_ACQUIRED, Long.toString(Instant.now().getEpochSecond()));
    try {
      backend.relabel(id, labels);
    } catch (RuntimeException e) {
      LOG.warn(
          "pool {}: cannot label sandbox {} as handed out ({}); it keeps its member labels"
              + " and expiry, so 'agentnest prune' may end it at that expiry",
          pool,
          id,
          e.toString());
    }
  }

  private static Map<String, Object> auditData(SandboxConfig config, DefaultSandbox sb) {
    Map<String, Object> created = new LinkedHashMap<>();
    created.put("image", config.image());
    created.put("runtime", config.runtime() == null ? "runc" : config.runtime());
    created.put("backend", config.backend());
    created.put("expires_at", sb.expiresAt().toString());
    created.put("memory_bytes", config.memoryBytes());
    created.put("cpus", config.cpus());
    created.put("pids", config.pidsLimit());
    created.put("network", config.network().isNone() ? "none" : config.network().rules());
    created.put("secrets", config.secretEnv().keySet());
    if (config.tenant() != null) {
      // Audit shipping tags each later record of this sandbox with it (collectors filter by
      // tenant).
      created.put("tenant", config.tenant());
    }
    return created;
  }

  /**
   * Reattaches to a running managed sandbox: limits and expiry from the labels the host wrote (and
   * the host state), never from what the agent says; the handle does not own the sandbox.
   */
  static Sandbox connect(RuntimeBackend backend, String idOrPrefix) {
    return connect(backend, idOrPrefix, ApprovalPolicy.none(), null);
  }

  /**
   * Reattaches with {@code approvals} and {@code handler}: the labels carry neither (a handler is
   * the caller's object), so the caller's current rules are the handle's, never none by omission.
   */
  static Sandbox connect(
      RuntimeBackend backend,
      String idOrPrefix,
      ApprovalPolicy approvals,
      @Nullable ApprovalHandler handler) {
    BackendSandbox bs = backend.attach(idOrPrefix);
    SandboxInfo info =
        backend
            .inspect(bs.id())
            .orElseThrow(
                () ->
                    new AgentNestException("sandbox " + idOrPrefix + " vanished while attaching"));
    Map<String, String> labels = info.labels();
    // The real limits, so that calls, fork and snapshot are bounded by them (not by the defaults).
    SandboxConfig.Builder b =
        ConfigCodec.fromLabels(
                labels, SandboxConfig.builder().backend(backend.name()).image(info.image()))
            .approvals(approvals)
            .approvalHandler(handler);
    AgentChannel channel = new AgentChannel(bs);
    try {
      DefaultSandbox sb = new DefaultSandbox(backend, bs.id(), b.build(), channel);
      AgentHello.exchange(sb.channel(), sb.id());
      Instant expiry = labelExpiry(labels).orElse(sb.expiresAt());
      Optional<HostState.Entry> state = HostState.read(sb.id());
      if (state.isPresent() && state.get().expiresAt().isAfter(expiry)) {
        expiry = state.get().expiresAt();
      }
      sb.expiry().setExpiresAt(expiry);
      // A handle that attached does not own the sandbox: its death must not orphan it, and the
      // expiry it knows must not cut short one set elsewhere (the agent keeps the later one).
      sb.expiry().setOwner(state.map(HostState.Entry::owner).orElse(HostState.DETACHED));
      sb.markAttached();
      sb.expiry().arm(true);
      return sb;
    } catch (RuntimeException e) {
      channel.close();
      throw e;
    }
  }

  /** A sandbox restored from another's checkpoint: its agent is already running, with state. */
  static DefaultSandbox adoptRestored(
      RuntimeBackend backend, BackendSandbox bs, SandboxConfig config, SandboxSpec spec) {
    AgentChannel channel = new AgentChannel(bs);
    try {
      // A fresh CA and fresh placeholders: the restored processes keep their parent's
      // placeholder values, which this sandbox's proxy does not swap (docs/egress.md).
      return ready(backend, bs, channel, config, spec, true, interceptionFor(config));
    } catch (RuntimeException | Error e) {
      FailedStart.discard(backend, bs, channel, e);
      throw e;
    }
  }

  static Optional<Instant> labelExpiry(Map<String, String> labels) {
    return parseLong(labels.get(Labels.EXPIRES)).map(Instant::ofEpochSecond);
  }

  private static Optional<Long> parseLong(@Nullable String s) {
    if (s == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(Long.parseLong(s));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }
}
