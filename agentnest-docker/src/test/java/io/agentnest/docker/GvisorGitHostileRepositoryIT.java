package io.agentnest.docker;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Every {@link GitHostileRepositoryIT} attack again, on gVisor (runsc): the issue reproduced both
 * ways of taking the token on runc and on gVisor.
 */
@ExtendWith(GvisorRequired.class)
class GvisorGitHostileRepositoryIT extends GitHostileRepositoryIT {
  @BeforeAll
  static void onGvisor() {
    runtime = "gvisor";
  }

  @AfterAll
  static void back() {
    runtime = "runc";
  }
}
