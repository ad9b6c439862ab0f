package io.agentnest.cli;

import io.agentnest.PoolOptions;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxPool;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local engine's warm pools, shaped by what its user asks for: after a sandbox of a new shape
 * (image, limits, network, runtime...; per-use settings such as environment and TTL aside) is made,
 * a pool of that shape keeps one member ready, and {@link Sandbox#create} hands the next sandbox of
 * that shape out of it without a container start. At most {@link #MAX_SHAPES} shapes, the first
 * ones asked for: a user who keeps changing shapes gets cold starts, not a host full of idle
 * containers. Members are not the user's sandboxes: the engine's idle exit ignores them and closes
 * the pools on its way out.
 */
final class EnginePools implements Function<SandboxConfig, Sandbox>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EnginePools.class);

  static final int MAX_SHAPES = 2;

  private final List<SandboxPool> pools = new ArrayList<>();
  private final int minIdle;
  private boolean closed;

  /** {@code minIdle} 0 turns the pools off (every create is a cold start). */
  EnginePools(int minIdle) {
    this.minIdle = minIdle;
  }

  @Override
  public Sandbox apply(SandboxConfig config) {
    Sandbox sb = Sandbox.create(config);
    warm(config);
    return sb;
  }

  private synchronized void warm(SandboxConfig config) {
    if (closed || minIdle == 0 || pools.size() >= MAX_SHAPES) {
      return;
    }
    for (SandboxPool p : pools) {
      if (p.matches(config)) {
        return;
      }
    }
    SandboxConfig template =
        config.toBuilder().clearEnv().clearSecretEnv().ttl(Duration.ofMinutes(30)).build();
    try {
      pools.add(
          SandboxPool.start(
              template,
              PoolOptions.builder()
                  .name("engine-" + pools.size())
                  .minIdle(minIdle)
                  .maxIdle(minIdle)
                  // Never a reason to wait: past this many, creates are simply cold.
                  .maxTotal(10_000)
                  .build()));
    } catch (RuntimeException e) {
      // A pool is an optimisation: the sandbox the user asked for exists; say why, go on cold.
      LOG.warn("no warm pool for this sandbox shape: {}", e.getMessage());
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    for (SandboxPool p : pools) {
      try {
        p.close();
      } catch (Exception e) {
        LOG.warn("closing the engine's pool {}: {}", p.name(), e.getMessage());
      }
    }
    pools.clear();
  }
}
