package io.agentnest.docker;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every {@link PoolIT} test again, on gVisor (runsc), where a warm pool saves the most. */
@ExtendWith(GvisorRequired.class)
class GvisorPoolIT extends PoolIT {
  @BeforeAll
  static void onGvisor() {
    runtime = "gvisor";
  }

  @AfterAll
  static void back() {
    runtime = "runc";
  }
}
