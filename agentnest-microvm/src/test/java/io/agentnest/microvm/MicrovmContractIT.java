package io.agentnest.microvm;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The microvm backend passes the backend contract with real QEMU guests (under TCG on a host where
 * KVM guests do not run; the accelerator is chosen at run time). Fork and snapshots carry the
 * guest's memory.
 */
@ExtendWith(MicrovmRequired.class)
class MicrovmContractIT implements BackendContract {
  private static final RuntimeBackend BACKEND = Backends.get("microvm");

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        BACKEND,
        SandboxConfig.builder().runtime("microvm").build(),
        ForkReport.Mode.CHECKPOINT,
        true,
        false);
  }
}
