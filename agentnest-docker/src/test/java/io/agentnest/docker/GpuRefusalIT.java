package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.UnsupportedControlException;
import io.agentnest.docker.internal.DockerEngine;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * On an engine without the NVIDIA runtime (CI's), a sandbox that asks for a GPU is refused before
 * any container exists: it never runs on the CPU. The GPU-present side is the {@code gpu} test
 * group ({@code scripts/test.sh -Pgpu}).
 */
@ExtendWith(DockerEngineRequired.class)
class GpuRefusalIT {
  @Test
  void aGpuSandboxIsRefusedWhereTheEngineHasNoNvidiaRuntime() {
    DockerEngine engine = DockerEngine.connect();
    boolean nvidia =
        engine.info().getRuntimes() != null && engine.info().getRuntimes().containsKey("nvidia");
    String label = "gpu-refusal-" + ProcessHandle.current().pid();
    // Never skipped: gVisor is refused GPUs on every engine; the missing-runtime refusal is
    // checked where the engine has no NVIDIA runtime (CI's; one that has it is the gpu group's).
    assertThatThrownBy(
            () ->
                Sandbox.create(
                    SandboxConfig.builder().runtime("runsc").gpus(1).label("test", label).build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("does not give to gVisor");
    if (!nvidia) {
      assertThatThrownBy(
              () -> Sandbox.create(SandboxConfig.builder().gpus(1).label("test", label).build()))
          .isInstanceOf(UnsupportedControlException.class)
          .hasMessageContaining("no NVIDIA runtime")
          .hasMessageContaining("never falls back to the CPU");
    }
    List<?> left =
        engine
            .client()
            .listContainersCmd()
            .withShowAll(true)
            .withLabelFilter(List.of("test=" + label))
            .exec();
    assertThat(left).isEmpty();
  }
}
