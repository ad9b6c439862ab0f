package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class QmpTest {
  @Test
  void aCommandWithoutArgumentsIsOneExecuteLine() throws Exception {
    assertThat(Qmp.request("stop", Map.of())).isEqualTo("{\"execute\":\"stop\"}");
  }

  @Test
  void theMigrationGoesToARelativeUnixPathInQemusWorkingDirectory() throws Exception {
    String line = Qmp.request("migrate", Map.of("uri", "unix:o-0a1b2c3d.sock"));
    assertThat(line)
        .contains("\"execute\":\"migrate\"")
        .contains("\"arguments\":{\"uri\":\"unix:o-0a1b2c3d.sock\"}")
        .doesNotContain("\n");
  }
}
