package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.Labels;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SandboxLauncherTest {
  @Test
  void theExpiryComesFromTheLabelTheHostWrote() {
    assertThat(SandboxLauncher.labelExpiry(Map.of(Labels.EXPIRES, "1700000000")))
        .contains(Instant.ofEpochSecond(1_700_000_000L));
  }

  @Test
  void aMissingOrGarbledExpiryLabelIsIgnoredNotTrusted() {
    assertThat(SandboxLauncher.labelExpiry(Map.of())).isEmpty();
    assertThat(SandboxLauncher.labelExpiry(Map.of(Labels.EXPIRES, "soon"))).isEmpty();
    assertThat(SandboxLauncher.labelExpiry(Map.of(Labels.EXPIRES, "9".repeat(40)))).isEmpty();
  }
}
