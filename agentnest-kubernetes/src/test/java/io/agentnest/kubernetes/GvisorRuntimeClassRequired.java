package io.agentnest.kubernetes;

import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * gVisor tests on Kubernetes need a RuntimeClass named {@code gvisor} (the test cluster's script
 * creates one, backed by runsc); under {@code CI=true} its absence is a failure. Runs after {@link
 * KubernetesClusterRequired}, which points the client at the cluster.
 */
public final class GvisorRuntimeClassRequired implements BeforeAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    try (KubernetesClient client = new KubernetesClientBuilder().build()) {
      if (client.resources(RuntimeClass.class).withName("gvisor").get() == null) {
        KubernetesClusterRequired.missing(
            "the cluster has no RuntimeClass 'gvisor': scripts/k8s/cluster.sh up creates it when"
                + " runsc is installed (scripts/setup-host.sh installs it); on another cluster"
                + " apply deploy/kubernetes/runtimeclass-gvisor.yaml after installing gVisor on"
                + " the nodes");
      }
    }
  }
}
