package io.agentnest.docker;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import org.junit.jupiter.api.extension.ExtendWith;

/** The Docker backend with runc passes the backend contract. */
@ExtendWith(DockerEngineRequired.class)
class RuncContractIT implements BackendContract {
  private static final DockerBackend BACKEND = new DockerBackend();

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        BACKEND,
        SandboxConfig.builder().backend("docker").runtime("runc").build(),
        ForkReport.Mode.STATE_TRANSFER,
        false,
        false);
  }
}
