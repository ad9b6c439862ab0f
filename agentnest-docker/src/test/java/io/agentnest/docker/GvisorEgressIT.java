package io.agentnest.docker;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every {@link EgressIT} test again, on gVisor (runsc): the tunnel needs only loopback. */
@ExtendWith(GvisorRequired.class)
class GvisorEgressIT extends EgressIT {
  @BeforeAll
  static void onGvisor() {
    sandbox.close();
    runtime = "gvisor";
    sandbox = createMain();
  }

  @AfterAll
  static void back() {
    runtime = "runc";
  }
}
