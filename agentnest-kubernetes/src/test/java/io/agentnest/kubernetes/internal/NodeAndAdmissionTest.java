package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NodeAndAdmissionTest {
  private static Node node(Map<String, String> annotations) {
    return new NodeBuilder()
        .withNewMetadata()
        .withName("n1")
        .withAnnotations(annotations)
        .endMetadata()
        .build();
  }

  @Test
  void theNodesAnnotationStatesThePodPidsLimitWhenItIsAPositiveWholeNumber() {
    assertThat(KubeCluster.annotatedPids(node(Map.of(KubeCluster.NODE_PIDS_ANNOTATION, "256"))))
        .isEqualTo(256);
    assertThat(KubeCluster.annotatedPids(node(Map.of()))).isZero();
    for (String bad : new String[] {"0", "-5", "12x", "", " 256", "99999999999", "1e3"}) {
      assertThat(KubeCluster.annotatedPids(node(Map.of(KubeCluster.NODE_PIDS_ANNOTATION, bad))))
          .as(bad)
          .isZero();
    }
  }

  @Test
  void aNamespaceCountsAsEnforcingOnlyWithEveryPodSecurityLabel() {
    Map<String, String> labels = new HashMap<>(Tenants.POD_SECURITY_LABELS);
    assertThat(Tenants.podSecurityLabelled(ns(labels))).isTrue();
    labels.put("pod-security.kubernetes.io/enforce", "baseline");
    assertThat(Tenants.podSecurityLabelled(ns(labels))).isFalse();
    labels.remove("pod-security.kubernetes.io/enforce");
    assertThat(Tenants.podSecurityLabelled(ns(labels))).isFalse();
    assertThat(Tenants.podSecurityLabelled(ns(Map.of()))).isFalse();
  }

  @Test
  void aPodSecurityRefusalSaysWhichStandardAndWhatToChangeNotRbac() {
    KubernetesClientException e =
        new KubernetesClientException(
            new StatusBuilder()
                .withCode(403)
                .withMessage(
                    "pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\":"
                        + " privileged (container \"c\" must not set"
                        + " securityContext.privileged=true)")
                .build());
    String msg = KubeErrors.of(e, "creating sandbox pod agentnest-a/x").getMessage();
    assertThat(msg)
        .contains("Pod Security admission refused", "restricted", "non-root")
        .doesNotContain("rbac.yaml");
  }

  private static Namespace ns(Map<String, String> labels) {
    return new NamespaceBuilder()
        .withNewMetadata()
        .withName("ns")
        .withLabels(labels)
        .endMetadata()
        .build();
  }
}
