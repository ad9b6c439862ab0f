package io.agentnest.docker;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Docker backend with runsc (gVisor) passes the backend contract; fork and snapshots carry
 * process memory there (checkpoint and restore).
 */
@ExtendWith({DockerEngineRequired.class, GvisorRequired.class})
class GvisorContractIT implements BackendContract {
  private static final DockerBackend BACKEND = new DockerBackend();

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        BACKEND,
        SandboxConfig.builder().backend("docker").runtime("gvisor").build(),
        ForkReport.Mode.CHECKPOINT,
        true,
        true);
  }
}
