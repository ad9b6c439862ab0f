package io.agentnest.kubernetes.internal;

import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import io.fabric8.kubernetes.client.KubernetesClientException;

/** Kubernetes API failures as AgentNest errors that say who must act and how. */
public final class KubeErrors {
  private KubeErrors() {}

  /**
   * A tenant's quota has no room: the backend's public face turns it into its {@code
   * QuotaExceededException} (this package may not import that face, which imports it).
   */
  public static final class QuotaFull extends AgentNestException {
    private static final long serialVersionUID = 1L;

    QuotaFull(String message, Throwable cause) {
      super(message, cause);
    }
  }

  public static AgentNestException of(KubernetesClientException e, String doing) {
    String status =
        e.getStatus() != null && e.getStatus().getMessage() != null
            ? e.getStatus().getMessage()
            : String.valueOf(e.getMessage());
    status = Text.bounded(status, 600);
    int code = e.getCode();
    if (code == 403 && status.contains("exceeded quota")) {
      return new QuotaFull(
          doing
              + ": the tenant's quota is used up ("
              + status
              + "): destroy sandboxes of this tenant ('agentnest ls', 'agentnest rm') or raise"
              + " its quota (AGENTNEST_KUBERNETES_QUOTA_*)",
          e);
    }
    if (code == 403 && status.contains("violates PodSecurity")) {
      return new AgentNestException(
          doing
              + ": the namespace's Pod Security admission refused the pod ("
              + status
              + "): tenant namespaces enforce the restricted standard; run the sandbox as a"
              + " non-root uid with no added capabilities, or ask the administrator",
          e);
    }
    if (code == 403) {
      return new AgentNestException(
          doing
              + ": the cluster refused it ("
              + status
              + "): the account in the kubeconfig needs the permissions in"
              + " deploy/kubernetes/rbac.yaml; 'agentnest doctor --backend kubernetes' checks"
              + " them",
          e);
    }
    if (code == 401) {
      return new BackendUnavailableException(
          doing
              + ": the cluster did not accept the credentials ("
              + status
              + "): check the kubeconfig (KUBECONFIG, AGENTNEST_KUBERNETES_CONTEXT)",
          e);
    }
    if (code == 0 || code >= 500) {
      return new BackendUnavailableException(
          doing
              + ": the Kubernetes API did not answer ("
              + status
              + "): check that the cluster is up and the kubeconfig names it; 'agentnest doctor"
              + " --backend kubernetes' tells what is wrong",
          e);
    }
    return new AgentNestException(doing + ": " + status, e);
  }
}
