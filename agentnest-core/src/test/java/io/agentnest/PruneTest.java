package io.agentnest;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PruneTest {
  @Test
  void pruneOfABackendNotOnTheClassPathNamesTheOnesThereAre() {
    assertThatThrownBy(() -> Sandbox.prune("no-such-backend", new PruneOptions(false, null, true)))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("backend 'no-such-backend' is not available")
        .hasMessageContaining("add its module");
  }
}
