package io.agentnest.config;

import io.agentnest.ConfigException;
import java.util.List;
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
 * @param api how sandboxes are made: {@code pods} (bare pods) or {@code agent-sandbox} (SIG Apps'
 *     Sandbox objects, which its controller turns into pods); null: pods
 */
public record KubernetesOptions(
    @Nullable String context,
    @Nullable String namespacePrefix,
    @Nullable String runtimeClass,
    @Nullable String tenant,
    Quota quota,
    @Nullable String api) {

  /** {@link #api()}: the backend makes bare pods (the default). */
  public static final String PODS = "pods";

  /** {@link #api()}: SIG Apps' Sandbox objects, which its controller makes pods of. */
  public static final String AGENT_SANDBOX = "agent-sandbox";

  /** The Kubernetes APIs sandboxes can be made through. */
  public static final List<String> APIS = List.of(PODS, AGENT_SANDBOX);

  /**
   * Refuses an {@code api} value the backend does not know, naming where it was set ({@code
   * setting}: the YAML key or the environment variable) and both choices.
   *
   * @throws ConfigException for anything but {@link #APIS}
   */
  public static void requireApi(String setting, String value) {
    if (!APIS.contains(value.strip())) {
      throw new ConfigException(
          setting
              + " '"
              + value
              + "' is not one the backend knows: use pods (bare pods, the default) or"
              + " agent-sandbox (SIG Apps' Sandbox objects; their CRDs and controller must run in"
              + " the cluster)");
    }
  }

  /** Nothing set. */
  public static final KubernetesOptions NONE =
      new KubernetesOptions(null, null, null, null, new Quota(null, null, null), null);

  /** Without {@code api} (pods), as before that setting. */
  public KubernetesOptions(
      @Nullable String context,
      @Nullable String namespacePrefix,
      @Nullable String runtimeClass,
      @Nullable String tenant,
      Quota quota) {
    this(context, namespacePrefix, runtimeClass, tenant, quota, null);
  }

  /**
   * A tenant namespace's quota; a null field is not limited.
   *
   * @param pods at most this many pods
   * @param cpu the sum of CPU limits, a Kubernetes quantity ("16", "500m")
   * @param memory the sum of memory limits ("64Gi")
   */
  public record Quota(@Nullable Integer pods, @Nullable String cpu, @Nullable String memory) {}
}
