package io.agentnest.kubernetes.internal;

import io.agentnest.ConfigException;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.config.KubernetesOptions;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * What the Kubernetes backend needs to know about the cluster beyond the kubeconfig: where tenants
 * live, which seccomp profile the nodes hold, and what the administrator vouches for. Read from
 * {@code AGENTNEST_KUBERNETES_*} environment variables (or the same names as system properties in
 * lower case with dots, e.g. {@code agentnest.kubernetes.tenant}), as kubectl reads KUBECONFIG.
 *
 * @param kubeconfig a kubeconfig file; null: found as kubectl finds it (KUBECONFIG, ~/.kube/config,
 *     or the in-cluster service account)
 * @param context the kubeconfig context; null: the current one
 * @param namespacePrefix tenant {@code t} lives in namespace {@code prefix + t}
 * @param tenant the tenant of a sandbox whose configuration names none
 * @param seccompLocalhostProfile the profile's path under the kubelet's seccomp directory on every
 *     node ({@code Localhost}); null: {@code RuntimeDefault}, and the sandbox's labels say so
 * @param seccompLocalhostProfileGvisor the same for pods of a gVisor (runsc) RuntimeClass:
 *     AgentNest's profile as runsc reads it ({@code seccomp-gvisor.json}, docs/kubernetes.md);
 *     null: such pods are refused when {@code seccompLocalhostProfile} is set (runsc would break
 *     the agent's threads with the runc profile), and run with {@code RuntimeDefault} otherwise
 * @param allowUnisolatedNetwork the administrator's explicit opt-out: run sandboxes even where the
 *     isolation canary finds that pods can reach each other
 * @param allowUnenforcedPids the administrator's explicit opt-out: run sandboxes on a RuntimeClass
 *     with a kernel of its own (gVisor, Kata), where no per-pod pids limit reaches the sandbox's
 *     processes, with only the memory and CPU limits bounding them
 * @param nodePidsLimit what the administrator says every node's kubelet enforces per pod ({@code
 *     podPidsLimit}), for when the backend may not read the kubelet's configuration; 0: unknown
 * @param quota the ResourceQuota each tenant namespace gets
 * @param imagePullPolicy {@code IfNotPresent}, {@code Never} or {@code Always}
 * @param startTimeout how long a pod may take from creation to running
 * @param api {@code pods} (the backend makes bare pods) or {@code agent-sandbox} (it makes SIG
 *     Apps' Sandbox objects with the same pod template, and their controller makes the pods)
 */
public record KubeSettings(
    @Nullable String kubeconfig,
    @Nullable String context,
    String namespacePrefix,
    String tenant,
    @Nullable String seccompLocalhostProfile,
    @Nullable String seccompLocalhostProfileGvisor,
    boolean allowUnisolatedNetwork,
    boolean allowUnenforcedPids,
    long nodePidsLimit,
    Quota quota,
    String imagePullPolicy,
    Duration startTimeout,
    String api) {

  /** Whether sandboxes are made through the agent-sandbox API rather than as bare pods. */
  public boolean agentSandbox() {
    return KubernetesOptions.AGENT_SANDBOX.equals(api);
  }

  /** A DNS-1123 label: what a namespace name must be. */
  private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");

  /**
   * The quota of a tenant namespace; a null field is not limited.
   *
   * @param pods at most this many pods (sandboxes, pool members and canaries)
   * @param cpu the sum of CPU limits, in Kubernetes quantity notation ("16", "500m")
   * @param memory the sum of memory limits ("64Gi")
   */
  public record Quota(@Nullable Integer pods, @Nullable String cpu, @Nullable String memory) {}

  public KubeSettings {
    if (!DNS_LABEL.matcher(namespacePrefix + "x").matches() || namespacePrefix.length() > 40) {
      throw new ConfigException(
          "kubernetes namespace_prefix '"
              + namespacePrefix
              + "' is not usable: a namespace name is lower-case letters, digits and '-' (at most"
              + " 63 characters with the tenant): use e.g. 'agentnest-'");
    }
    tenantNamespace(namespacePrefix, tenant);
    if (!imagePullPolicy.equals("IfNotPresent")
        && !imagePullPolicy.equals("Never")
        && !imagePullPolicy.equals("Always")) {
      throw new ConfigException(
          "kubernetes image_pull_policy '"
              + imagePullPolicy
              + "' is not one of IfNotPresent, Never, Always");
    }
    if (nodePidsLimit < 0) {
      throw new ConfigException(
          "kubernetes node_pids_limit must be 0 (unknown) or the nodes' podPidsLimit, not "
              + nodePidsLimit);
    }
  }

  /** The namespace of {@code tenant}; a bad tenant name is an error that says what is allowed. */
  public String namespaceOf(@Nullable String tenantOrNull) {
    return tenantNamespace(namespacePrefix, tenantOrNull == null ? tenant : tenantOrNull);
  }

  private static String tenantNamespace(String prefix, String tenant) {
    String ns = prefix + tenant;
    if (!DNS_LABEL.matcher(tenant).matches() || ns.length() > 63) {
      throw new ConfigException(
          "tenant '"
              + tenant
              + "' cannot name a Kubernetes namespace: use lower-case letters, digits and '-',"
              + " starting and ending with a letter or digit, at most "
              + (63 - prefix.length())
              + " characters");
    }
    return ns;
  }

  /**
   * From the system properties, the environment, then the {@code kubernetes:} block of the
   * configuration file discovery finds (profile {@code $AGENTNEST_PROFILE}): a key set in a more
   * specific place wins.
   */
  public static KubeSettings fromEnvironment() {
    return fromEnvironment(AgentNestConfig.load().kubernetes(null));
  }

  /** From the system properties, the environment, then {@code file} (a config file's block). */
  public static KubeSettings fromEnvironment(KubernetesOptions file) {
    return layered(KubeSettings::lookup, file);
  }

  static KubeSettings layered(Function<String, @Nullable String> over, KubernetesOptions file) {
    return from(
        key -> {
          String v = over.apply(key);
          return v != null ? v : fileValue(file, key);
        });
  }

  /** The file's value for an {@code AGENTNEST_KUBERNETES_} key, as text; null: not set there. */
  private static @Nullable String fileValue(KubernetesOptions file, String key) {
    return switch (key) {
      case "CONTEXT" -> file.context();
      case "NAMESPACE_PREFIX" -> file.namespacePrefix();
      case "TENANT" -> file.tenant();
      case "QUOTA_PODS" -> file.quota().pods() == null ? null : file.quota().pods().toString();
      case "QUOTA_CPU" -> file.quota().cpu();
      case "QUOTA_MEMORY" -> file.quota().memory();
      case "API" -> file.api();
      default -> null;
    };
  }

  static KubeSettings from(Function<String, @Nullable String> get) {
    String pods = get.apply("QUOTA_PODS");
    Integer podQuota = null;
    if (pods != null) {
      try {
        podQuota = Integer.valueOf(pods.trim());
      } catch (NumberFormatException e) {
        throw new ConfigException(
            "AGENTNEST_KUBERNETES_QUOTA_PODS '" + pods + "' is not a whole number, e.g. 50");
      }
    }
    String pidsLimit = get.apply("NODE_PIDS_LIMIT");
    long nodePids;
    try {
      nodePids = pidsLimit == null ? 0 : Long.parseLong(pidsLimit.trim());
    } catch (NumberFormatException e) {
      throw new ConfigException(
          "AGENTNEST_KUBERNETES_NODE_PIDS_LIMIT '"
              + pidsLimit
              + "' is not a whole number: give the kubelets' podPidsLimit, e.g. 1024");
    }
    String timeout = get.apply("START_TIMEOUT_SECONDS");
    Duration start;
    try {
      start = Duration.ofSeconds(timeout == null ? 180 : Long.parseLong(timeout.trim()));
    } catch (NumberFormatException e) {
      throw new ConfigException(
          "AGENTNEST_KUBERNETES_START_TIMEOUT_SECONDS '" + timeout + "' is not a whole number");
    }
    String api = orDefault(get.apply("API"), KubernetesOptions.PODS);
    KubernetesOptions.requireApi("AGENTNEST_KUBERNETES_API", api);
    return new KubeSettings(
        get.apply("KUBECONFIG"),
        get.apply("CONTEXT"),
        orDefault(get.apply("NAMESPACE_PREFIX"), "agentnest-"),
        orDefault(get.apply("TENANT"), "default"),
        get.apply("SECCOMP_PROFILE"),
        get.apply("SECCOMP_PROFILE_GVISOR"),
        Boolean.parseBoolean(orDefault(get.apply("ALLOW_UNISOLATED_NETWORK"), "false")),
        Boolean.parseBoolean(orDefault(get.apply("ALLOW_UNENFORCED_PIDS"), "false")),
        nodePids,
        new Quota(podQuota, get.apply("QUOTA_CPU"), get.apply("QUOTA_MEMORY")),
        orDefault(get.apply("IMAGE_PULL_POLICY"), "IfNotPresent"),
        start,
        api);
  }

  private static String orDefault(@Nullable String v, String d) {
    return v == null || v.isBlank() ? d : v.trim();
  }

  private static @Nullable String lookup(String key) {
    String v =
        System.getProperty(
            "agentnest.kubernetes." + key.toLowerCase(Locale.ROOT).replace('_', '.'));
    if (v == null) {
      v = System.getenv("AGENTNEST_KUBERNETES_" + key);
    }
    return v == null || v.isBlank() ? null : v;
  }

  /** For tests: settings from a map of the keys without their prefix. */
  static KubeSettings of(Map<String, String> values) {
    return from(values::get);
  }

  /**
   * Settings from a map of the keys without their {@code AGENTNEST_KUBERNETES_} prefix (e.g. {@code
   * TENANT}), for embedding several backends in one process.
   */
  public static KubeSettings fromMap(Map<String, String> values) {
    return from(values::get);
  }
}
