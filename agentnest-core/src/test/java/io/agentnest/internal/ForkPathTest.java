package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import org.junit.jupiter.api.Test;

class ForkPathTest {
  @Test
  void gvisorForksCopyMemoryByCheckpoint() {
    assertThat(ForkPath.byCheckpoint(SandboxConfig.builder().runtime("runsc").build())).isTrue();
    assertThat(ForkPath.byCheckpoint(SandboxConfig.builder().runtime("gvisor").build())).isTrue();
  }

  @Test
  void secretVariablesKeepMemoryOffTheEnginesDiskSoStateIsTransferred() {
    SandboxConfig withSecret =
        SandboxConfig.builder().runtime("runsc").secretEnv("TOKEN", Secret.of("s3cret")).build();
    assertThat(ForkPath.byCheckpoint(withSecret)).isFalse();
  }

  @Test
  void runcAndTheDefaultRuntimeTransferState() {
    assertThat(ForkPath.byCheckpoint(SandboxConfig.builder().runtime("runc").build())).isFalse();
    assertThat(ForkPath.byCheckpoint(SandboxConfig.builder().runtime(null).build())).isFalse();
  }

  @Test
  void aBulkDirectoryChoosesTheBulkLinkElseTheChannel() {
    assertThat(ForkPath.transfer(true)).isEqualTo(ForkPath.BULK_LINK);
    assertThat(ForkPath.transfer(false)).isEqualTo(ForkPath.CHANNEL);
  }
}
