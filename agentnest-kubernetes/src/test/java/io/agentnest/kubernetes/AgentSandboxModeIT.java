package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.kubernetes.internal.AgentSandboxes;
import io.agentnest.spi.BackendSandbox;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code kubernetes.api: agent-sandbox} on the test cluster, with SIG Apps' CRDs installed and its
 * controller (built from its Go module at a pinned release) running: the backend makes a Sandbox
 * object, the controller makes the pod (and makes it again), and the pod's hardening and the
 * removal are the backend's as with bare pods. The agent's channel through it: {@code
 * KubernetesCliIT}.
 */
@ExtendWith(KubernetesClusterRequired.class)
class AgentSandboxModeIT {
  static final ResourceDefinitionContext SANDBOX = AgentSandboxes.SANDBOX;
  static final String NS = "agentnest-agent-sandbox";

  static KubernetesClient admin;
  static KubernetesBackend backend;

  @BeforeAll
  static void connect() {
    admin = new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build();
    backend =
        new KubernetesBackend(
            KubeSettingsAccess.of(Map.of("API", "agent-sandbox", "TENANT", "agent-sandbox")));
  }

  @AfterAll
  static void close() {
    admin.close();
  }

  @Test
  void theControllerMakesTheSandboxesPodAndRemovalTakesBothAway() throws Exception {
    // The tenancy suite's small sleeping sandbox, in this tenant.
    BackendSandbox sb = backend.create(TenancyIT.spec("agent-sandbox"));
    String id = sb.id();
    try {
      GenericKubernetesResource sandbox =
          admin.genericKubernetesResources(SANDBOX).inNamespace(NS).withName(id).get();
      assertThat(sandbox).as("the Sandbox object the backend made").isNotNull();
      Pod pod = admin.pods().inNamespace(NS).withName(id).get();
      assertThat(pod.getMetadata().getOwnerReferences())
          .as("the pod is the controller's, owned by the Sandbox")
          .anySatisfy(
              o -> {
                assertThat(o.getKind()).isEqualTo("Sandbox");
                assertThat(o.getUid()).isEqualTo(sandbox.getMetadata().getUid());
              });
      assertThat(pod.getSpec().getContainers().get(0).getSecurityContext().getRunAsNonRoot())
          .isTrue();
      assertThat(pod.getSpec().getAutomountServiceAccountToken()).isFalse();

      // The controller reconciles: a pod deleted behind its back comes again.
      String firstUid = pod.getMetadata().getUid();
      admin.pods().inNamespace(NS).withName(id).withGracePeriod(0).delete();
      Pod again =
          admin
              .pods()
              .inNamespace(NS)
              .withName(id)
              .waitUntilCondition(
                  p -> p != null && !firstUid.equals(p.getMetadata().getUid()),
                  120,
                  TimeUnit.SECONDS);
      assertThat(again.getMetadata().getOwnerReferences())
          .anyMatch(o -> "Sandbox".equals(o.getKind()));
    } finally {
      sb.close();
      backend.destroy(id);
    }
    admin
        .genericKubernetesResources(SANDBOX)
        .inNamespace(NS)
        .withName(id)
        .waitUntilCondition(Objects::isNull, 60, TimeUnit.SECONDS);
    admin
        .pods()
        .inNamespace(NS)
        .withName(id)
        .waitUntilCondition(Objects::isNull, 60, TimeUnit.SECONDS);
    assertThat(backend.inspect(id)).isEmpty();
  }
}
