package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.spi.RuntimeBackend;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StateTransferReportsTest {
  private static final RuntimeBackend DOCKER_LIKE = FakeBackends.gvisorOnly();

  private static ForkReport report(SandboxConfig config) {
    return report(config, false);
  }

  private static ForkReport report(SandboxConfig config, boolean attached) {
    return StateTransferReports.report(
        "parent",
        DOCKER_LIKE,
        config,
        attached,
        Map.of("default", List.of("x")),
        List.of(),
        10,
        20,
        Duration.ZERO);
  }

  @Test
  void aTransferReportsWhatMovedAndFromWhom() {
    ForkReport r = report(SandboxConfig.builder().runtime("runc").build());
    assertThat(r.mode()).isEqualTo(ForkReport.Mode.STATE_TRANSFER);
    assertThat(r.parentId()).isEqualTo("parent");
    assertThat(r.skipped()).isEmpty();
  }

  @Test
  void secretsOnABackendThatCannotCheckpointAnywayAreNotReported() {
    ForkReport r =
        report(
            SandboxConfig.builder()
                .runtime("runc")
                .secretEnv("TOKEN", Secret.of("s3cret"))
                .build());
    assertThat(r.skipped()).isEmpty();
  }

  @Test
  void onGvisorWithSecretsTheReportSaysWhyMemoryWasNotCopied() {
    ForkReport r =
        report(
            SandboxConfig.builder()
                .runtime("runsc")
                .secretEnv("TOKEN", Secret.of("s3cret"))
                .build());
    assertThat(r.skipped())
        .singleElement()
        .satisfies(s -> assertThat(s.reason()).contains("secret variables"));
  }

  @Test
  void anAttachedHandleSaysWhyItDidNotCopyMemory() {
    ForkReport r = report(SandboxConfig.builder().runtime("runsc").build(), true);
    assertThat(r.skipped())
        .singleElement()
        .satisfies(s -> assertThat(s.reason()).contains("attached", "secret variables"));
  }
}
