package io.agentnest.internal.pool;

import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What shapes a sandbox, so two configurations with equal keys can share a pooled one: the backend,
 * the spec the policy layer makes (image, runtime, limits, user, mounts, seccomp, tenant and user
 * labels) and the network policy. Per-use settings are left out: plain and secret environment
 * variables (delivered at hand-out), the TTL and the per-creation labels (owner, times).
 */
record PoolKey(String backend, SandboxSpec spec, NetworkPolicy network) {
  private static final Set<String> PER_CREATION =
      Set.of(
          Labels.OWNER,
          Labels.OWNER_PID,
          Labels.OWNER_HOST,
          Labels.CREATED,
          Labels.EXPIRES,
          Labels.POOL);

  static PoolKey of(SandboxConfig config) {
    SandboxSpec spec = SecurityPolicy.specFor(shape(config, Duration.ofMinutes(30)));
    Map<String, String> labels = new TreeMap<>(spec.labels());
    labels.keySet().removeAll(PER_CREATION);
    return new PoolKey(config.backend(), spec.toBuilder().labels(labels).build(), config.network());
  }

  /** {@code config} without its per-use parts, living {@code ttl}: what a member starts with. */
  static SandboxConfig shape(SandboxConfig config, Duration ttl) {
    return config.toBuilder().clearEnv().clearSecretEnv().ttl(ttl).build();
  }
}
