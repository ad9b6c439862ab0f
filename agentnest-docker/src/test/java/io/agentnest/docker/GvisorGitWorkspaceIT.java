package io.agentnest.docker;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Every {@link GitWorkspaceIT} test again, on gVisor (runsc): the credential helper's unix socket,
 * and a fork restored from a checkpoint that finds its parent's socket file.
 */
@ExtendWith(GvisorRequired.class)
class GvisorGitWorkspaceIT extends GitWorkspaceIT {
  @BeforeAll
  static void onGvisor() {
    runtime = "gvisor";
  }

  @AfterAll
  static void back() {
    runtime = "runc";
  }
}
