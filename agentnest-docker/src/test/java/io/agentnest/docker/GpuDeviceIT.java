package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The gpu group ({@code scripts/test.sh -Pgpu}, never CI): on a host with an NVIDIA GPU and the
 * NVIDIA Container Toolkit, a sandbox of the gpu preset sees a CUDA device. The query uses the
 * driver library the toolkit mounts in, through ctypes: no CUDA package in the image.
 */
@Tag("gpu")
@ExtendWith(DockerEngineRequired.class)
class GpuDeviceIT {
  static final String QUERY =
      "import ctypes\n"
          + "cuda = ctypes.CDLL('libcuda.so.1')\n"
          + "assert cuda.cuInit(0) == 0, 'cuInit failed'\n"
          + "n = ctypes.c_int()\n"
          + "assert cuda.cuDeviceGetCount(ctypes.byref(n)) == 0\n"
          + "name = ctypes.create_string_buffer(256)\n"
          + "cuda.cuDeviceGetName(name, 256, 0)\n"
          + "print(n.value, name.value.decode())\n";

  @Test
  void aGpuPresetSandboxSeesACudaDevice() {
    DockerEngine engine = DockerEngine.connect();
    assertThat(engine.info().getRuntimes())
        .as("the gpu group needs the NVIDIA runtime registered in Docker")
        .containsKey("nvidia");
    PresetImages.ensure("gpu");
    try (Sandbox sb = Sandbox.create(SandboxConfig.preset("gpu").build())) {
      ExecResult r = sb.runCode(QUERY);
      assertThat(r.exitCode()).as(r.stderr()).isZero();
      assertThat(Integer.parseInt(r.stdout().strip().split(" ")[0])).isPositive();
    }
  }
}
