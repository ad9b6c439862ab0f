package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.spi.RuntimeBackend;
import org.junit.jupiter.api.Test;

class ForkPathTest {
  private static final RuntimeBackend GVISOR_ONLY = FakeBackends.gvisorOnly();

  private static final RuntimeBackend NEVER = FakeBackends.never();

  @Test
  void aHandleThatAttachedNeverCheckpointsMemoryItCannotKnowTheSecretsOf() {
    SandboxConfig gvisor = SandboxConfig.builder().runtime("gvisor").build();
    assertThat(ForkPath.byCheckpoint(GVISOR_ONLY, gvisor, true)).isFalse();
    assertThat(ForkPath.withheldForSecrets(GVISOR_ONLY, gvisor, true)).isTrue();
    assertThat(ForkPath.withheldForSecrets(NEVER, gvisor, true)).isFalse();
  }

  @Test
  void theBackendDecidesWhetherMemoryIsCheckpointedNeverTheRuntimeName() {
    SandboxConfig gvisor = SandboxConfig.builder().runtime("gvisor").build();
    assertThat(ForkPath.byCheckpoint(NEVER, gvisor, false)).isFalse();
    SandboxConfig secret = gvisor.toBuilder().secretEnv("TOKEN", Secret.of("s3cret")).build();
    assertThat(ForkPath.withheldForSecrets(GVISOR_ONLY, secret, false)).isTrue();
    assertThat(ForkPath.withheldForSecrets(NEVER, secret, false)).isFalse();
  }

  @Test
  void gvisorForksCopyMemoryByCheckpoint() {
    assertThat(
            ForkPath.byCheckpoint(
                GVISOR_ONLY, SandboxConfig.builder().runtime("runsc").build(), false))
        .isTrue();
    assertThat(
            ForkPath.byCheckpoint(
                GVISOR_ONLY, SandboxConfig.builder().runtime("gvisor").build(), false))
        .isTrue();
  }

  @Test
  void secretVariablesKeepMemoryOffTheEnginesDiskSoStateIsTransferred() {
    SandboxConfig withSecret =
        SandboxConfig.builder().runtime("runsc").secretEnv("TOKEN", Secret.of("s3cret")).build();
    assertThat(ForkPath.byCheckpoint(GVISOR_ONLY, withSecret, false)).isFalse();
  }

  @Test
  void runcAndTheDefaultRuntimeTransferState() {
    assertThat(
            ForkPath.byCheckpoint(
                GVISOR_ONLY, SandboxConfig.builder().runtime("runc").build(), false))
        .isFalse();
    assertThat(
            ForkPath.byCheckpoint(
                GVISOR_ONLY, SandboxConfig.builder().runtime(null).build(), false))
        .isFalse();
  }

  @Test
  void aBulkDirectoryChoosesTheBulkLinkElseTheChannel() {
    assertThat(ForkPath.transfer(true)).isEqualTo(ForkPath.BULK_LINK);
    assertThat(ForkPath.transfer(false)).isEqualTo(ForkPath.CHANNEL);
  }
}
