package io.agentnest.kubernetes;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import org.junit.jupiter.api.extension.ExtendWith;

/** The Kubernetes backend, with pods on runc, passes the backend contract on a real cluster. */
@ExtendWith(KubernetesClusterRequired.class)
class KubernetesContractIT implements BackendContract {
  private static final RuntimeBackend BACKEND = Backends.get("kubernetes");

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        BACKEND,
        SandboxConfig.builder().backend("kubernetes").build(),
        ForkReport.Mode.STATE_TRANSFER,
        false,
        false);
  }
}
