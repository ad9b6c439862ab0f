package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

class PrerequisitesTest {

  @Test
  void underCiAMissingPrerequisiteFailsNamingItAndTheProblem() {
    assertThatThrownBy(() -> Prerequisites.missing("the Docker engine", "no socket", true))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("CI=true and the Docker engine is not usable: no socket");
  }

  @Test
  void outsideCiAMissingPrerequisiteSkipsWithTheReason() {
    assertThatThrownBy(() -> Prerequisites.missing("the Docker engine", "no socket", false))
        .isInstanceOf(TestAbortedException.class)
        .hasMessageContaining("SKIPPED (no the Docker engine): no socket");
  }
}
