package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.model.DeviceRequest;
import com.github.dockerjava.api.model.HostConfig;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.SandboxSpec;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The gpu preset's container spec, and its refusal wherever the engine cannot give GPUs. */
class DockerGpusTest {
  private static SandboxSpec spec(int gpus) {
    return SandboxSpec.builder()
        .image("agentnest/python:gpu")
        .command("python3", "-c", "pass")
        .cpus(1)
        .memoryBytes(256L << 20)
        .pidsLimit(128)
        .seccompProfileJson("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}")
        .openFilesLimit(4096)
        .gpus(gpus)
        .build();
  }

  @Test
  void aGpuSandboxGetsAnNvidiaDeviceRequestAndKeepsItsHardening() {
    HostConfig hc = ContainerSpecs.hostConfig(spec(2), "nvidia", null);
    assertThat(hc.getDeviceRequests()).hasSize(1);
    DeviceRequest r = hc.getDeviceRequests().get(0);
    assertThat(r.getDriver()).isEqualTo("nvidia");
    assertThat(r.getCount()).isEqualTo(2);
    assertThat(r.getCapabilities()).isEqualTo(List.of(List.of("gpu")));
    assertThat(hc.getNetworkMode()).isEqualTo("none");
    assertThat(hc.getReadonlyRootfs()).isTrue();
    assertThat(hc.getSecurityOpts()).contains("no-new-privileges:true");
  }

  @Test
  void aSandboxWithoutGpusGetsNoDeviceRequest() {
    HostConfig hc = ContainerSpecs.hostConfig(spec(0), null, null);
    assertThat(hc.getDeviceRequests()).isNullOrEmpty();
    DockerGpus.check(Set.of("runc"), null, 0);
  }

  @Test
  void withoutTheNvidiaRuntimeAGpuSandboxIsRefusedNotRunOnTheCpu() {
    assertThatThrownBy(() -> DockerGpus.check(Set.of("runc", "runsc"), null, 1))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("asks for 1 GPU(s)")
        .hasMessageContaining("no NVIDIA runtime")
        .hasMessageContaining("nvidia-ctk runtime configure")
        .hasMessageContaining("never falls back to the CPU");
    DockerGpus.check(Set.of("runc", "nvidia"), null, 1);
    DockerGpus.check(Set.of("runc", "nvidia"), "nvidia", 4);
  }

  @Test
  void gvisorIsRefusedGpus() {
    assertThatThrownBy(() -> DockerGpus.check(Set.of("runc", "runsc", "nvidia"), "runsc", 1))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("gVisor");
  }

  @Test
  void otherBackendsRefuseGpusByName() {
    assertThatThrownBy(() -> spec(1).refuseGpus("kubernetes"))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("kubernetes backend cannot provide");
    spec(0).refuseGpus("kubernetes");
  }
}
