package io.agentnest.tck;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.RuntimeBackend;
import java.util.Objects;

/**
 * The backend a contract test runs against, and what the contract may expect of it.
 *
 * @param backend the SPI object, for listing, labels, resources and refusal checks
 * @param config a configuration that selects this backend and runtime; each test derives its own
 *     from it
 * @param forkMode how {@code fork()} must report it carried state
 * @param snapshotsKeepMemory whether a snapshot must carry process memory
 * @param limitsMayEndTheSandbox whether a workload hitting the memory or pids limit may end the
 *     whole sandbox (gVisor: its kernel's limits apply to the sandbox as a unit) instead of only
 *     the offending process; the call must then fail as closed, never hang or pass
 */
public record BackendUnderTest(
    RuntimeBackend backend,
    SandboxConfig config,
    ForkReport.Mode forkMode,
    boolean snapshotsKeepMemory,
    boolean limitsMayEndTheSandbox) {
  public BackendUnderTest {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(forkMode, "forkMode");
    if (!config.backend().equals(backend.name())) {
      throw new IllegalArgumentException(
          "config selects backend '"
              + config.backend()
              + "' but the backend under test is '"
              + backend.name()
              + "': build the config with .backend(\""
              + backend.name()
              + "\")");
    }
  }

  /** A builder for one test's configuration, labelled so leftovers are recognisable. */
  public SandboxConfig.Builder configure() {
    return config.toBuilder().label("agentnest-tck", "true");
  }
}
