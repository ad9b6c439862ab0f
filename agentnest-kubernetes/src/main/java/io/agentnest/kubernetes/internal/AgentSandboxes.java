package io.agentnest.kubernetes.internal;

import io.agentnest.UnsupportedControlException;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Sandboxes made through Kubernetes SIG Apps' agent-sandbox API ({@code kubernetes.api:
 * agent-sandbox}): a {@code Sandbox} object (agents.x-k8s.io/v1beta1) carries the same hardened pod
 * template the backend would create as a bare pod, and the project's controller makes the pod,
 * under the same name, owned by the Sandbox. Everything after (waiting, the agent's exec, listing
 * by labels) is the pod's, as in the bare-pod mode; removal deletes the Sandbox first, or the
 * controller would make the pod again.
 */
public final class AgentSandboxes {
  /** The Sandbox resource (agents.x-k8s.io/v1beta1). */
  public static final ResourceDefinitionContext SANDBOX =
      new ResourceDefinitionContext.Builder()
          .withGroup("agents.x-k8s.io")
          .withVersion("v1beta1")
          .withKind("Sandbox")
          .withPlural("sandboxes")
          .withNamespaced(true)
          .build();

  /** What a create and the doctor report where the cluster does not serve {@link #SANDBOX}. */
  static final String NOT_INSTALLED =
      "kubernetes.api is agent-sandbox, but the cluster has no Sandbox resource"
          + " (agents.x-k8s.io/v1beta1)";

  /** What to do about {@link #NOT_INSTALLED}. */
  static final String INSTALL =
      "install the agent-sandbox CRDs and run its controller (docs/kubernetes.md), or use"
          + " kubernetes.api: pods";

  private static final KubernetesSerialization JSON = new KubernetesSerialization();
  private final KubernetesClient client;

  AgentSandboxes(KubernetesClient client) {
    this.client = client;
  }

  /** The Sandbox that makes {@code pod}: its labels, annotations and spec as the pod template. */
  static GenericKubernetesResource sandboxFor(Pod pod) {
    Map<String, Object> template = new LinkedHashMap<>();
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("labels", pod.getMetadata().getLabels());
    meta.put("annotations", pod.getMetadata().getAnnotations());
    template.put("metadata", meta);
    template.put("spec", JSON.convertValue(pod.getSpec(), Map.class));
    Map<String, Object> spec = new LinkedHashMap<>();
    spec.put("podTemplate", template);
    // The agent's channel is an exec stream: no Service, so nothing in the cluster can dial in.
    spec.put("service", false);
    return new GenericKubernetesResourceBuilder()
        .withApiVersion(SANDBOX.getGroup() + "/" + SANDBOX.getVersion())
        .withKind(SANDBOX.getKind())
        .withNewMetadata()
        .withName(pod.getMetadata().getName())
        .withNamespace(pod.getMetadata().getNamespace())
        .withLabels(pod.getMetadata().getLabels())
        .endMetadata()
        .withAdditionalProperties(Map.of("spec", spec))
        .build();
  }

  void create(Pod pod) {
    try {
      client
          .genericKubernetesResources(SANDBOX)
          .inNamespace(pod.getMetadata().getNamespace())
          .resource(sandboxFor(pod))
          .create();
    } catch (KubernetesClientException e) {
      if (e.getCode() == 404) {
        throw new UnsupportedControlException(NOT_INSTALLED + ": " + INSTALL);
      }
      throw e;
    }
  }

  /** Deletes the Sandbox named {@code id}, if any: its controller then removes the pod. */
  void delete(String ns, String id) {
    try {
      client.genericKubernetesResources(SANDBOX).inNamespace(ns).withName(id).delete();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        throw e;
      }
    }
  }

  /** Whether the cluster serves the Sandbox resource in {@code ns} (a tenant may not read CRDs). */
  boolean installed(String ns) {
    try {
      client
          .genericKubernetesResources(SANDBOX)
          .inNamespace(ns)
          .list(new ListOptionsBuilder().withLimit(1L).build());
      return true;
    } catch (KubernetesClientException e) {
      return e.getCode() != 404;
    }
  }
}
