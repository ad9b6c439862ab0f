package io.agentnest.internal;

import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.PoolOptions;
import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.SandboxRuntime;
import io.agentnest.SnapshotCheck;
import io.agentnest.SnapshotInfo;
import io.agentnest.audit.AuditEvent;
import io.agentnest.config.Presets;
import io.agentnest.internal.audit.Audit;
import io.agentnest.internal.lifecycle.Pruner;
import io.agentnest.internal.pool.PoolRegistry;
import io.agentnest.internal.remote.RemoteBackend;
import io.agentnest.internal.remote.RemoteSandbox;
import io.agentnest.internal.snapshot.SnapshotStore;
import io.agentnest.spi.Backends;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime behind {@link Sandbox}'s statics (registered in {@code META-INF/services}): the
 * default backend is {@code docker}.
 */
public final class DefaultSandboxRuntime implements SandboxRuntime {
  private static final Logger LOG = LoggerFactory.getLogger(DefaultSandboxRuntime.class);

  private static final String DEFAULT_BACKEND = "docker";

  /**
   * A configuration for the {@code remote} backend names its server; one that selects the backend
   * without naming one gets the server this process is configured for (AGENTNEST_URL).
   */
  private static SandboxConfig remote(SandboxConfig config) {
    if (config.remote() != null) {
      return config;
    }
    return config.toBuilder().remote(RemoteBackend.server()).build();
  }

  private static boolean isRemote(@Nullable SandboxConfig config) {
    return config != null
        && (config.remote() != null || config.backend().equals(RemoteBackend.NAME));
  }

  /** Statics with no configuration go to the remote server when this process names one. */
  private static boolean remoteDefault() {
    return RemoteBackend.configured().isPresent();
  }

  @Override
  public Sandbox create(SandboxConfig config) {
    if (isRemote(config)) {
      return RemoteSandbox.create(remote(config));
    }
    Optional<SandboxPool> pool = PoolRegistry.match(config);
    return pool.isPresent() ? pool.get().acquire(config) : SandboxLauncher.create(config);
  }

  @Override
  public SandboxConfig.Builder preset(String name) {
    return Presets.get(name).sandboxConfig().toBuilder();
  }

  @Override
  public SandboxPool startPool(SandboxConfig template, PoolOptions options) {
    return PoolRegistry.start(template, options, SandboxLauncher.STARTS);
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
    if (remoteDefault()) {
      return RemoteSandbox.connect(RemoteBackend.server(), idOrPrefix);
    }
    return SandboxLauncher.connect(Backends.get(DEFAULT_BACKEND), idOrPrefix);
  }

  @Override
  public Sandbox connect(
      String idOrPrefix, ApprovalPolicy approvals, @Nullable ApprovalHandler handler) {
    if (remoteDefault()) {
      // The remote server asks its own approvals; a local handler would never be consulted.
      return SandboxRuntime.super.connect(idOrPrefix, approvals, handler);
    }
    return SandboxLauncher.connect(Backends.get(DEFAULT_BACKEND), idOrPrefix, approvals, handler);
  }

  @Override
  public List<SandboxInfo> list() {
    return Backends.get(remoteDefault() ? RemoteBackend.NAME : DEFAULT_BACKEND).list();
  }

  @Override
  public Sandbox restore(String name, @Nullable SandboxConfig config) {
    if (config != null && isRemote(config)) {
      return RemoteSandbox.restore(name, remote(config));
    }
    if (config == null && remoteDefault()) {
      return RemoteSandbox.restore(
          name, SandboxConfig.builder().remote(RemoteBackend.server()).build());
    }
    return SnapshotStore.local().restore(name, config, SandboxLauncher.STARTS);
  }

  @Override
  public List<SnapshotInfo> snapshots() {
    if (remoteDefault()) {
      return RemoteSandbox.snapshots(RemoteBackend.server());
    }
    return SnapshotStore.local().list();
  }

  @Override
  public List<SnapshotCheck> checkSnapshots(boolean hashParts) {
    if (remoteDefault()) {
      return SandboxRuntime.super.checkSnapshots(hashParts);
    }
    return SnapshotStore.local().check(hashParts);
  }

  @Override
  public boolean removeSnapshot(String name) {
    if (remoteDefault()) {
      return RemoteSandbox.removeSnapshot(RemoteBackend.server(), name);
    }
    return removeLocalSnapshot(name);
  }

  private static boolean removeLocalSnapshot(String name) {
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
  public PruneReport prune(String backend, PruneOptions options) {
    return Pruner.prune(Backends.get(backend), options);
  }

  @Override
  public void destroyOnExit(boolean on) {
    OwnedSandboxes.destroyOnExit(on);
  }
}
