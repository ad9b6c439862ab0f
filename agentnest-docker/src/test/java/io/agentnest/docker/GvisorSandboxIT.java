package io.agentnest.docker;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every {@link SandboxIT} test again, on gVisor (runsc). */
@ExtendWith(GvisorRequired.class)
class GvisorSandboxIT extends SandboxIT {
  @BeforeAll
  static void onGvisor() {
    sandbox.close();
    runtime = "gvisor";
    sandbox =
        Sandbox.create(
            SandboxConfig.builder().runtime(runtime).label("test", "sandbox-it-gvisor").build());
  }

  @AfterAll
  static void back() {
    runtime = "runc";
  }
}
