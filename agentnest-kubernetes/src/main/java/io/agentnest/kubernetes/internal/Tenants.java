package io.agentnest.kubernetes.internal;

import io.agentnest.UnsupportedControlException;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LimitRange;
import io.fabric8.kubernetes.api.model.LimitRangeBuilder;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A namespace per tenant, with what every tenant namespace must hold: a ResourceQuota, a LimitRange
 * and a deny-all NetworkPolicy (ingress and egress). Created where missing and brought back to what
 * the settings say where changed; checked once per namespace and process.
 */
public final class Tenants {
  public static final String QUOTA = "agentnest-quota";
  public static final String LIMITS = "agentnest-limits";
  public static final String DENY_ALL = "agentnest-deny-all";

  /** The label a tenant namespace carries, for listing and for an administrator's policies. */
  public static final String TENANT_NAMESPACE_LABEL = "agentnest.io/tenant";

  /**
   * Pod Security admission's labels on every tenant namespace: the API server itself refuses a pod
   * that falls short of the restricted standard (enforce), and records and warns about it (audit,
   * warn), whoever creates it. The backend also checks its own pods ({@link RestrictedProfile}), so
   * a regression in what it builds fails before the cluster is asked.
   */
  public static final Map<String, String> POD_SECURITY_LABELS =
      Map.of(
          "pod-security.kubernetes.io/enforce", "restricted",
          "pod-security.kubernetes.io/enforce-version", "latest",
          "pod-security.kubernetes.io/audit", "restricted",
          "pod-security.kubernetes.io/warn", "restricted");

  private final KubernetesClient client;
  private final KubeSettings settings;
  private final Set<String> ready = ConcurrentHashMap.newKeySet();

  public Tenants(KubernetesClient client, KubeSettings settings) {
    this.client = client;
    this.settings = settings;
  }

  /**
   * Makes sure {@code namespace} of {@code tenant} exists with its quota and policies. An account
   * scoped to one tenant may not change them (it could raise its own quota): for it they must exist
   * already, as an administrator applied them (deploy/kubernetes/tenant.yaml).
   */
  public void ensure(String tenant, String namespace) {
    if (ready.contains(namespace)) {
      return;
    }
    // Sandboxes created at once for a new tenant would otherwise all write its quota together,
    // and all but one fail on the conflict (bench --only tenant-fill found it).
    synchronized (this) {
      if (!ready.contains(namespace)) {
        prepare(tenant, namespace);
      }
    }
  }

  private void prepare(String tenant, String namespace) {
    String doing = "preparing the namespace '" + namespace + "' of tenant '" + tenant + "'";
    try {
      if (mayWrite(namespace)) {
        Namespace existing = client.namespaces().withName(namespace).get();
        if (existing == null) {
          createIfAbsent(
              new NamespaceBuilder()
                  .withNewMetadata()
                  .withName(namespace)
                  .addToLabels(TENANT_NAMESPACE_LABEL, tenant)
                  .addToLabels(PodSpecs.MANAGED_LABEL, "true")
                  .addToLabels(POD_SECURITY_LABELS)
                  .endMetadata()
                  .build());
        } else if (!podSecurityLabelled(existing)) {
          // A namespace made by an earlier version or by hand: labelled, not replaced.
          client
              .namespaces()
              .withName(namespace)
              .edit(
                  n ->
                      new NamespaceBuilder(n)
                          .editMetadata()
                          .addToLabels(POD_SECURITY_LABELS)
                          .endMetadata()
                          .build());
        }
        apply(quota(namespace));
        apply(limitRange(namespace));
        apply(denyAll(namespace));
      } else {
        requirePresent(namespace);
      }
    } catch (KubernetesClientException e) {
      throw KubeErrors.of(e, doing);
    }
    ready.add(namespace);
  }

  /** Whether this account may create the tenant's quota (an administrator's account). */
  private boolean mayWrite(String namespace) {
    return KubeDoctor.allowed(client, namespace, "create", "resourcequotas", "")
        && KubeDoctor.allowed(client, "", "create", "namespaces", "");
  }

  static boolean podSecurityLabelled(Namespace ns) {
    Map<String, String> labels = ns.getMetadata().getLabels();
    return labels != null && labels.entrySet().containsAll(POD_SECURITY_LABELS.entrySet());
  }

  private void requirePresent(String namespace) {
    List<String> missing = new ArrayList<>();
    if (client.resourceQuotas().inNamespace(namespace).withName(QUOTA).get() == null) {
      missing.add("ResourceQuota " + QUOTA);
    }
    NetworkPolicy p =
        client.network().v1().networkPolicies().inNamespace(namespace).withName(DENY_ALL).get();
    if (p == null
        || !p.getSpec().getPolicyTypes().containsAll(List.of("Ingress", "Egress"))
        || !p.getSpec().getIngress().isEmpty()
        || !p.getSpec().getEgress().isEmpty()
        || !p.getSpec().getPodSelector().getAdditionalProperties().isEmpty()
        || p.getSpec().getPodSelector().getMatchLabels() != null
            && !p.getSpec().getPodSelector().getMatchLabels().isEmpty()) {
      missing.add("a deny-all NetworkPolicy " + DENY_ALL);
    }
    if (!missing.isEmpty()) {
      throw new UnsupportedControlException(
          "namespace "
              + namespace
              + " lacks "
              + String.join(" and ", missing)
              + ", and this account may not create them: an administrator applies"
              + " deploy/kubernetes/tenant.yaml for this tenant");
    }
  }

  private void createIfAbsent(HasMetadata r) {
    try {
      client.resource(r).create();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 409) {
        throw e;
      }
    }
  }

  private void apply(HasMetadata r) {
    // Server-side apply needs 1.22 for some kinds; create-or-replace works on 1.20 and later. The
    // quota controller writes a quota's status all the time, and another host may prepare the same
    // tenant: a conflict is retried a few times on the latest version.
    for (int attempt = 1; ; attempt++) {
      try {
        client.resource(r).createOr(existing -> existing.update());
        return;
      } catch (KubernetesClientException e) {
        if (e.getCode() != 409 || attempt == 5) {
          throw e;
        }
      }
    }
  }

  ResourceQuota quota(String namespace) {
    Map<String, Quantity> hard = new LinkedHashMap<>();
    KubeSettings.Quota q = settings.quota();
    if (q.pods() != null) {
      hard.put("pods", new Quantity(q.pods().toString()));
    }
    if (q.cpu() != null) {
      hard.put("limits.cpu", new Quantity(q.cpu()));
    }
    if (q.memory() != null) {
      hard.put("limits.memory", new Quantity(q.memory()));
    }
    if (hard.isEmpty()) {
      // A quota object with nothing in it still counts use, so 'doctor' and errors can show it.
      hard.put("pods", new Quantity("1000"));
    }
    return new ResourceQuotaBuilder()
        .withNewMetadata()
        .withName(QUOTA)
        .withNamespace(namespace)
        .addToLabels(PodSpecs.MANAGED_LABEL, "true")
        .endMetadata()
        .withNewSpec()
        .withHard(hard)
        .endSpec()
        .build();
  }

  static LimitRange limitRange(String namespace) {
    // For a pod someone else puts in the namespace without limits; sandbox pods name their own.
    Map<String, Quantity> dflt = Map.of("cpu", new Quantity("1"), "memory", new Quantity("512Mi"));
    return new LimitRangeBuilder()
        .withNewMetadata()
        .withName(LIMITS)
        .withNamespace(namespace)
        .addToLabels(PodSpecs.MANAGED_LABEL, "true")
        .endMetadata()
        .withNewSpec()
        .addNewLimit()
        .withType("Container")
        .withDefault(dflt)
        .withDefaultRequest(dflt)
        .endLimit()
        .endSpec()
        .build();
  }

  static NetworkPolicy denyAll(String namespace) {
    return new NetworkPolicyBuilder()
        .withNewMetadata()
        .withName(DENY_ALL)
        .withNamespace(namespace)
        .addToLabels(PodSpecs.MANAGED_LABEL, "true")
        .endMetadata()
        .withNewSpec()
        .withNewPodSelector()
        .endPodSelector()
        .withPolicyTypes("Ingress", "Egress")
        .endSpec()
        .build();
  }
}
