package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.SandboxConfig;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

class PidsEnforcementTest {
  private static RuntimeClass rc(String name, String handler) {
    return new RuntimeClassBuilder()
        .withNewMetadata()
        .withName(name)
        .endMetadata()
        .withHandler(handler)
        .build();
  }

  @Test
  void runcPodsAreHeldByTheNodeAndGvisorPodsByTheirOwnKernel() {
    assertThat(PidsEnforcement.of(null, 256, false)).isEqualTo(PidsEnforcement.NODE);
    assertThat(PidsEnforcement.of(rc("runc", "runc"), 256, false)).isEqualTo(PidsEnforcement.NODE);
    assertThat(PidsEnforcement.of(rc("gvisor", "runsc"), 256, false))
        .isEqualTo(PidsEnforcement.SANDBOX_KERNEL);
    assertThat(PidsEnforcement.of(rc("gvisor", "runsc"), 0, false)).isEqualTo(PidsEnforcement.NODE);
  }

  @Test
  void anotherKernelOfItsOwnIsRefusedNamingTheWaiverUnlessTheAdministratorGaveIt() {
    assertThatThrownBy(() -> PidsEnforcement.of(rc("kata", "kata-qemu"), 256, false))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("RuntimeClass kata")
        .hasMessageContaining("AGENTNEST_KUBERNETES_ALLOW_UNENFORCED_PIDS=true");
    assertThat(PidsEnforcement.of(rc("kata", "kata-qemu"), 256, true))
        .isEqualTo(PidsEnforcement.UNENFORCED);
  }

  @Test
  void theHolderIsToldTheLimitOnItsCommandLineWhichTheSandboxCannotChange() {
    SandboxSpec spec =
        SandboxSpec.builder()
            .image(SandboxConfig.DEFAULT_IMAGE)
            .command("python3")
            .cpus(0.2)
            .memoryBytes(64L << 20)
            .pidsLimit(64)
            .seccompProfileJson("{}")
            .openFilesLimit(1024)
            .build();
    Pod pod = PodSpecs.build("sb-x", "ns", "t", spec, "gvisor", null, "Never");
    assertThat(pod.getSpec().getContainers().get(0).getCommand())
        .isEqualTo(List.of("python3", "-c", PodSpecs.HOLDER, "--nofile", "1024"));
    PodSpecs.limitTasksInTheSandboxKernel(pod, 64);
    assertThat(pod.getSpec().getContainers().get(0).getCommand())
        .isEqualTo(List.of("python3", "-c", PodSpecs.HOLDER, "--nofile", "1024", "--nproc", "64"));
    assertThat(PodSpecs.HOLDER).contains("RLIMIT_NPROC").contains("os._exit(71)");
  }
}
