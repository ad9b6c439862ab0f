package io.agentnest.config;

import org.jspecify.annotations.Nullable;

/**
 * The {@code kubernetes:} block of a settings section (defaults overlaid with a profile, then the
 * {@code AGENTNEST_KUBERNETES_*} environment variables), for the Kubernetes backend's cluster-wide
 * settings. A null field is not set: the backend's own default applies. The per-sandbox parts
 * ({@code tenant}, {@code runtime_class}) also reach the {@link io.agentnest.SandboxConfig} ({@code
 * tenant}, {@code runtime}).
 *
 * @param context the kubeconfig context; null: the current one
 * @param namespacePrefix tenant {@code t} lives in namespace {@code prefix + t}
 * @param runtimeClass the RuntimeClass sandboxes run with (gVisor, Kata)
 * @param tenant the tenant of a sandbox whose configuration names none
 * @param quota the ResourceQuota each tenant namespace gets
 */
public record KubernetesOptions(
    @Nullable String context,
    @Nullable String namespacePrefix,
    @Nullable String runtimeClass,
    @Nullable String tenant,
    Quota quota) {

  /** Nothing set. */
  public static final KubernetesOptions NONE =
      new KubernetesOptions(null, null, null, null, new Quota(null, null, null));

  /**
   * A tenant namespace's quota; a null field is not limited.
   *
   * @param pods at most this many pods
   * @param cpu the sum of CPU limits, a Kubernetes quantity ("16", "500m")
   * @param memory the sum of memory limits ("64Gi")
   */
  public record Quota(@Nullable Integer pods, @Nullable String cpu, @Nullable String memory) {}
}
