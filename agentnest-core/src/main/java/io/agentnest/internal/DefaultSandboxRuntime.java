package io.agentnest.internal;

import io.agentnest.PoolOptions;
import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.lifecycle.Pruner;
import io.agentnest.internal.pool.PoolRegistry;
import io.agentnest.internal.remote.RemoteSandbox;
import io.agentnest.spi.Backends;
import io.agentnest.spi.SandboxRuntime;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The runtime behind {@link Sandbox}'s statics (registered in {@code META-INF/services}): the
 * default backend is {@code docker}.
 */
public final class DefaultSandboxRuntime implements SandboxRuntime {
  private static final String DEFAULT_BACKEND = "docker";

  @Override
  public Sandbox create(SandboxConfig config) {
    if (config.remote() != null) {
      return RemoteSandbox.create(config);
    }
    Optional<SandboxPool> pool = PoolRegistry.match(config);
    return pool.isPresent() ? pool.get().acquire(config) : DefaultSandbox.create(config);
  }

  @Override
  public SandboxPool startPool(SandboxConfig template, PoolOptions options) {
    return PoolRegistry.start(template, options);
  }

  @Override
  public List<SandboxPool> pools() {
    return PoolRegistry.running();
  }

  @Override
  public boolean isIdlePoolMember(SandboxInfo info) {
    return PoolRegistry.isIdleMember(info);
  }

  @Override
  public Sandbox connect(String idOrPrefix) {
    return DefaultSandbox.connect(Backends.get(DEFAULT_BACKEND), idOrPrefix);
  }

  @Override
  public List<SandboxInfo> list() {
    return Backends.get(DEFAULT_BACKEND).list();
  }

  @Override
  public Sandbox restore(String name, @Nullable SandboxConfig config) {
    if (config != null && config.remote() != null) {
      return RemoteSandbox.restore(name, config);
    }
    return DefaultSandbox.restoreSnapshot(name, config);
  }

  @Override
  public List<SnapshotInfo> snapshots() {
    return DefaultSandbox.snapshots();
  }

  @Override
  public boolean removeSnapshot(String name) {
    return DefaultSandbox.removeSnapshot(name);
  }

  @Override
  public PruneReport prune(String backend, PruneOptions options) {
    return Pruner.prune(Backends.get(backend), options);
  }
}
