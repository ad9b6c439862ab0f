package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AgentSandboxesTest {
  @Test
  void theSandboxCarriesThePodsNameLabelsAnnotationsAndHardenedSpecAndAsksForNoService() {
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName("sb-0123")
            .withNamespace("agentnest-a")
            .withLabels(Map.of("agentnest.managed", "true"))
            .withAnnotations(Map.of("agentnest.io/seccomp", "RuntimeDefault"))
            .endMetadata()
            .withNewSpec()
            .withAutomountServiceAccountToken(false)
            .addNewContainer()
            .withName("sandbox")
            .withImage("agentnest/python:latest")
            .withNewSecurityContext()
            .withRunAsNonRoot(true)
            .withAllowPrivilegeEscalation(false)
            .endSecurityContext()
            .endContainer()
            .endSpec()
            .build();

    GenericKubernetesResource s = AgentSandboxes.sandboxFor(pod);

    assertThat(s.getApiVersion()).isEqualTo("agents.x-k8s.io/v1beta1");
    assertThat(s.getKind()).isEqualTo("Sandbox");
    assertThat(s.getMetadata().getName()).isEqualTo("sb-0123");
    assertThat(s.getMetadata().getNamespace()).isEqualTo("agentnest-a");
    assertThat((Object) s.get("spec", "service")).isEqualTo(false);
    assertThat((Object) s.get("spec", "podTemplate", "metadata", "labels"))
        .isEqualTo(Map.of("agentnest.managed", "true"));
    assertThat((Object) s.get("spec", "podTemplate", "metadata", "annotations"))
        .isEqualTo(Map.of("agentnest.io/seccomp", "RuntimeDefault"));
    assertThat((Object) s.get("spec", "podTemplate", "spec", "automountServiceAccountToken"))
        .isEqualTo(false);
    assertThat(
            (Object)
                s.get(
                    "spec",
                    "podTemplate",
                    "spec",
                    "containers",
                    0,
                    "securityContext",
                    "runAsNonRoot"))
        .isEqualTo(true);
  }
}
