package io.agentnest.internal.pool;

import io.agentnest.ConfigException;
import io.agentnest.PoolOptions;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.internal.context.SandboxStarts;
import io.agentnest.internal.lifecycle.HostState;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/** The running pools of this process, where {@code Sandbox.create} looks for a matching one. */
public final class PoolRegistry {
  private static final List<SandboxPool> POOLS = new CopyOnWriteArrayList<>();

  private PoolRegistry() {}

  /** Starts a pool on the template's backend and registers it until it closes. */
  public static synchronized SandboxPool start(
      SandboxConfig template, PoolOptions options, SandboxStarts starts) {
    for (SandboxPool p : POOLS) {
      if (p.name().equals(options.name())) {
        throw new ConfigException(
            "a pool named '"
                + options.name()
                + "' runs already in this process: give the new one another name, or close the"
                + " old one first");
      }
    }
    BackendMembers members =
        new BackendMembers(Backends.get(template.backend()), template, options, starts);
    AtomicReference<SandboxPool> self = new AtomicReference<>();
    WarmPool<BackendMembers.Member> pool =
        new WarmPool<>(
            template, options, members, System::nanoTime, true, () -> POOLS.remove(self.get()));
    self.set(pool);
    POOLS.add(pool);
    return pool;
  }

  /** The first running pool that serves {@code config}. */
  public static Optional<SandboxPool> match(SandboxConfig config) {
    if (POOLS.isEmpty()) {
      return Optional.empty();
    }
    return POOLS.stream().filter(p -> p.matches(config)).findFirst();
  }

  public static List<SandboxPool> running() {
    return List.copyOf(POOLS);
  }

  /**
   * A listed sandbox is an idle pool member when it carries a pool label and no sign of a user: no
   * hand-out label (Kubernetes sets one) and no host state (written at hand-out; Docker's labels
   * cannot change).
   */
  public static boolean isIdleMember(SandboxInfo info) {
    return info.labels().containsKey(Labels.POOL)
        && !info.labels().containsKey(Labels.POOL_ACQUIRED)
        && HostState.read(info.id()).isEmpty();
  }
}
