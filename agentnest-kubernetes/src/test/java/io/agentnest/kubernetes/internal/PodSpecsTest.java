package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PodSpecsTest {
  static SandboxSpec spec(Map<String, String> labels) {
    return SandboxSpec.builder()
        .image("agentnest/python:latest")
        .command("python3", "-u", "-c", "pass")
        .env(Map.of("A", "1"))
        .labels(labels)
        .cpus(1.5)
        .memoryBytes(256L << 20)
        .pidsLimit(128)
        .tmpfs(Map.of("/tmp", 64L << 20, "/workspace", 128L << 20))
        .seccompProfileJson("{}")
        .openFilesLimit(1024)
        .build();
  }

  private static Pod pod() {
    return PodSpecs.build(
        "sb-1",
        "agentnest-t",
        "t",
        spec(Map.of("agentnest.owner", "host:1:2", "agentnest-tck", "true")),
        null,
        null,
        "IfNotPresent");
  }

  @Test
  void aSandboxPodMeetsTheRestrictedProfile() {
    assertThat(RestrictedProfile.violations(pod())).isEmpty();
  }

  @Test
  void theSandboxPodIsHardenedAndLimited() {
    Pod p = pod();
    Container c = p.getSpec().getContainers().get(0);
    assertThat(p.getSpec().getAutomountServiceAccountToken()).isFalse();
    assertThat(p.getSpec().getEnableServiceLinks()).isFalse();
    assertThat(p.getSpec().getRestartPolicy()).isEqualTo("Never");
    assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
    assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
    assertThat(c.getSecurityContext().getRunAsUser()).isEqualTo(65534L);
    assertThat(c.getResources().getLimits().get("cpu").toString()).isEqualTo("1500m");
    assertThat(c.getResources().getLimits().get("memory").toString())
        .isEqualTo(Long.toString(256L << 20));
    assertThat(c.getResources().getRequests().get("cpu").toString()).isEqualTo("150m");
    assertThat(c.getResources().getRequests().get("memory"))
        .isEqualTo(c.getResources().getLimits().get("memory"));
    assertThat(p.getSpec().getVolumes())
        .allSatisfy(v -> assertThat(v.getEmptyDir().getMedium()).isEqualTo("Memory"));
    assertThat(c.getVolumeMounts())
        .extracting(m -> m.getMountPath())
        .containsExactlyInAnyOrder("/tmp", "/workspace");
    // The main process is the holder; the agent comes by exec, so no channel byte is logged. A
    // pod spec has no ulimits: the holder lowers the open-files limit for everything it starts.
    assertThat(c.getCommand())
        .containsExactly("python3", "-c", PodSpecs.HOLDER, "--nofile", "1024");
    assertThat(c.getStdin()).isFalse();
  }

  @Test
  void labelsKubernetesCannotHoldAreKeptInTheAnnotation() {
    Pod p = pod();
    assertThat(p.getMetadata().getLabels())
        .containsEntry("agentnest-tck", "true")
        .containsEntry(PodSpecs.TENANT_LABEL, "t")
        .doesNotContainKey("agentnest.owner");
    assertThat(KubeCluster.labels(p)).containsEntry("agentnest.owner", "host:1:2");
  }

  @Test
  void theSeccompProfileSaysWhichItIs() {
    assertThat(pod().getMetadata().getAnnotations())
        .containsEntry(PodSpecs.SECCOMP_ANNOTATION, "RuntimeDefault");
    Pod local =
        PodSpecs.build(
            "sb-1", "ns", "t", spec(Map.of()), "gvisor", "agentnest/profile.json", "Never");
    assertThat(local.getSpec().getSecurityContext().getSeccompProfile().getType())
        .isEqualTo("Localhost");
    assertThat(local.getSpec().getRuntimeClassName()).isEqualTo("gvisor");
    assertThat(local.getMetadata().getAnnotations())
        .containsEntry(PodSpecs.SECCOMP_ANNOTATION, "Localhost/agentnest/profile.json");
  }

  @Test
  void aNamedOrRootUserIsRefused() {
    assertThatThrownBy(() -> PodSpecs.user("nobody"))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("numeric uid");
    assertThatThrownBy(() -> PodSpecs.user("0:0"))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("never runs as root");
    assertThat(PodSpecs.user("1000")).containsExactly(1000L, 1000L);
  }

  @Test
  void theProfileCheckFindsEachWeakening() {
    Pod weak =
        new PodBuilder(pod())
            .editSpec()
            .withHostNetwork(true)
            .withAutomountServiceAccountToken(true)
            .addNewVolume()
            .withName("host")
            .withNewHostPath()
            .withPath("/")
            .endHostPath()
            .endVolume()
            .editFirstContainer()
            .editSecurityContext()
            .withPrivileged(true)
            .withAllowPrivilegeEscalation(true)
            .withRunAsNonRoot(false)
            .editCapabilities()
            .withDrop()
            .withAdd("SYS_ADMIN")
            .endCapabilities()
            .endSecurityContext()
            .endContainer()
            .endSpec()
            .build();
    assertThat(RestrictedProfile.violations(weak))
        .anyMatch(v -> v.contains("hostNetwork"))
        .anyMatch(v -> v.contains("service-account token"))
        .anyMatch(v -> v.contains("hostPath"))
        .anyMatch(v -> v.contains("privileged"))
        .anyMatch(v -> v.contains("privilege escalation"))
        .anyMatch(v -> v.contains("may run as root"))
        .anyMatch(v -> v.contains("drop ALL"))
        .anyMatch(v -> v.contains("adds capabilities"));
  }

  @Test
  void weakenedSpecsAreRefusedNamingTheControl() {
    SandboxSpec open = spec(Map.of()).toBuilder().networkDisabled(false).build();
    assertThatThrownBy(() -> KubeCluster.refuseWeakened(open))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("network");
  }
}
