package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.snapshot.ConfigCodec;
import io.agentnest.spi.SandboxSpec;
import org.junit.jupiter.api.Test;

/** The read-only workspace option: how it is configured and what the backend is asked for. */
class ReadOnlyWorkspaceConfigTest {
  @Test
  void aReadOnlyWorkspaceIsNoWritableMountAndNotHome() {
    SandboxSpec spec =
        SecurityPolicy.specFor(SandboxConfig.builder().readOnlyWorkspace(true).build());
    assertThat(spec.tmpfs()).containsOnlyKeys("/tmp");
    assertThat(spec.readOnlyRootFilesystem()).isTrue();
    assertThat(spec.env()).containsEntry("HOME", "/tmp");
    assertThat(spec.workdir()).as("the engine creates it").isEqualTo(SandboxConfig.WORKSPACE);

    SandboxSpec normal = SecurityPolicy.specFor(SandboxConfig.defaults());
    assertThat(normal.tmpfs()).containsKeys("/tmp", SandboxConfig.WORKSPACE);
    assertThat(normal.env()).containsEntry("HOME", SandboxConfig.WORKSPACE);
  }

  @Test
  void itNeedsTheReadOnlyRootAndSaysSo() {
    assertThatThrownBy(
            () ->
                SandboxConfig.builder()
                    .readOnlyWorkspace(true)
                    .readOnlyRootFilesystem(false)
                    .build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("readOnlyWorkspace needs the read-only root filesystem")
        .hasMessageContaining("read_only_root: true");
  }

  @Test
  void yamlAndSnapshotsCarryIt() {
    SandboxConfig c =
        AgentNestConfig.parse(
                "defaults:\n  security:\n    read_only_workspace: true\n", "agentnest.yaml")
            .sandboxConfig();
    assertThat(c.readOnlyWorkspace()).isTrue();
    assertThat(SandboxConfig.defaults().readOnlyWorkspace()).isFalse();
    assertThat(c.toBuilder().build().readOnlyWorkspace()).isTrue();
    assertThat(ConfigCodec.fromJson(ConfigCodec.toJson(c)).readOnlyWorkspace()).isTrue();
  }
}
