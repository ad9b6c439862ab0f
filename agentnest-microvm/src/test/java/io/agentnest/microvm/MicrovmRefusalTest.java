package io.agentnest.microvm;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.SandboxSpec;
import org.junit.jupiter.api.Test;

/** What the backend cannot enforce is refused before anything starts, naming it. */
class MicrovmRefusalTest {
  private static final MicrovmBackend BACKEND = new MicrovmBackend();

  private static SandboxSpec.Builder spec() {
    return SandboxSpec.builder()
        .image("agentnest/python:latest")
        .command("python3", "-c", "pass")
        .workdir("/workspace")
        .cpus(1.0)
        .memoryBytes(256L << 20)
        .pidsLimit(64)
        .openFilesLimit(1024)
        .seccompProfileJson("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}");
  }

  @Test
  void aWritableRootIsRefused() {
    assertThatThrownBy(() -> BACKEND.create(spec().readOnlyRootFilesystem(false).build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("read-only");
  }

  @Test
  void firecrackerAndForeignRuntimesAreRefusedNamingThem() {
    assertThatThrownBy(() -> BACKEND.create(spec().runtime("firecracker").build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("firecracker", "runtime 'microvm'");
    assertThatThrownBy(() -> BACKEND.create(spec().runtime("runsc").build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("'runsc'", "docker backend");
  }

  @Test
  void gpusAreRefused() {
    assertThatThrownBy(() -> BACKEND.create(spec().gpus(1).build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("GPU");
  }
}
