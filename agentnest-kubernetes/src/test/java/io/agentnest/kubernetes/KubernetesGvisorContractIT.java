package io.agentnest.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Kubernetes backend with pods on the {@code gvisor} RuntimeClass passes the backend contract
 * on a real cluster: the same pod hardening, with gVisor's kernel between the sandbox and the node.
 */
@ExtendWith({KubernetesClusterRequired.class, GvisorRuntimeClassRequired.class})
class KubernetesGvisorContractIT implements BackendContract {
  private static final RuntimeBackend BACKEND =
      ServiceLoader.load(RuntimeBackend.class).stream()
          .map(ServiceLoader.Provider::get)
          .filter(b -> b.name().equals("kubernetes"))
          .findFirst()
          .orElseThrow();

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        BACKEND,
        SandboxConfig.builder().backend("kubernetes").runtime("gvisor").build(),
        ForkReport.Mode.STATE_TRANSFER,
        false,
        true);
  }

  /** Not only the contract: the pod's kernel is gVisor's, not the node's (this JVM's host). */
  @Test
  void theSandboxDoesNotSeeTheNodesKernel() {
    try (Sandbox sb = Sandbox.create(target().config())) {
      String release = sb.exec("uname -r").stdout().strip();
      assertThat(release).isNotBlank().isNotEqualTo(System.getProperty("os.version"));
    }
  }
}
