package io.agentnest.internal.pool;

import io.agentnest.PoolOptions;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.agent.AgentBytecode;
import io.agentnest.agent.AgentSources;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.context.FailedStart;
import io.agentnest.internal.context.SandboxStarts;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.Labels;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.AgentNestHome;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Members started through the {@link RuntimeBackend} SPI, the same for every backend: the container
 * (or pod) of the template's shape with the {@code agentnest.pool} label, the agent's bootstrap
 * sent and nothing else, so the agent waits for its first frame (the secrets) and has run nothing.
 * The hand-out is the launcher's ({@link SandboxStarts#handOut}).
 */
final class BackendMembers implements Members<BackendMembers.Member> {
  private static final Logger LOG = LoggerFactory.getLogger(BackendMembers.class);

  /**
   * Beyond {@code idle_ttl}, for the label expiry of a waiting member: the pool replaces it at
   * {@code idle_ttl}; this only lets prune find one whose host died.
   */
  private static final Duration LABEL_SLACK = Duration.ofMinutes(2);

  /**
   * A waiting member's CPU weight, an eighth of the usual: a refill (the agent's start) yields to
   * running sandboxes on a busy host; the hand-out gives the usual weight back.
   */
  static final int MEMBER_CPU_SHARES = SandboxSpec.DEFAULT_CPU_SHARES / 8;

  /**
   * A started member: its connection, the channel its agent waits on, and whether it waits at
   * {@link #MEMBER_CPU_SHARES}.
   */
  record Member(BackendSandbox connection, AgentChannel channel, boolean lowCpuWeight) {}

  private final RuntimeBackend backend;
  private final SandboxConfig shape;
  private final String pool;
  private final SandboxStarts starts;

  BackendMembers(
      RuntimeBackend backend, SandboxConfig template, PoolOptions options, SandboxStarts starts) {
    this.backend = backend;
    this.starts = starts;
    this.shape = PoolKey.shape(template, options.idleTtl().plus(LABEL_SLACK));
    this.pool = options.name();
  }

  @Override
  public Member start() {
    AgentBytecode.prepare(AgentNestHome.dir().resolve("cache"));
    SandboxSpec base = SecurityPolicy.specFor(shape);
    Map<String, String> labels = new LinkedHashMap<>(base.labels());
    labels.put(Labels.POOL, pool);
    SandboxSpec.Builder spec = base.toBuilder().labels(labels);
    // Only where the weight can be given back at hand-out (not gVisor: runsc cannot update).
    boolean low = backend.canSetCpuShares(base);
    if (low) {
      spec.cpuShares(MEMBER_CPU_SHARES);
    }
    BackendSandbox bs = backend.create(spec.build());
    AgentChannel channel = null;
    try {
      channel = new AgentChannel(bs);
      channel.sendRaw(AgentSources.bootstrapPayload());
      return new Member(bs, channel, low);
    } catch (RuntimeException | Error e) {
      FailedStart.discard(backend, bs, channel, e);
      throw e;
    }
  }

  @Override
  public boolean alive(Member member) {
    return member.channel().isAlive();
  }

  @Override
  public void destroy(Member member) {
    member.channel().close();
    try {
      backend.destroy(member.connection().id());
    } catch (RuntimeException e) {
      LOG.warn(
          "pool {}: cannot destroy sandbox {} ({}); 'agentnest prune' removes it",
          pool,
          member.connection().id(),
          e.toString());
    }
  }

  @Override
  public void precheck(SandboxConfig config) {
    starts.requireAuditRoom(config);
  }

  @Override
  public Sandbox handOut(Member member, SandboxConfig config, Runnable onRelease) {
    return starts.handOut(
        backend,
        member.connection(),
        member.channel(),
        config,
        pool,
        member.lowCpuWeight(),
        onRelease);
  }
}
