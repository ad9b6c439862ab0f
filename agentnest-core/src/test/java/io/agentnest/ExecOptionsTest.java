package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ExecOptionsTest {

  @Test
  void defaultsLeaveEverythingToTheSandbox() {
    ExecOptions o = ExecOptions.defaults();
    assertThat(o.timeout()).isNull();
    assertThat(o.maxOutputBytes()).isNull();
    assertThat(o.workdir()).isNull();
    assertThat(o.env()).isEmpty();
    assertThat(o.stdin()).isEmpty();
    assertThat(o.onOutput()).isNull();
    assertThat(ExecOptions.defaults()).isSameAs(o);
  }

  @Test
  void builderKeepsValues() {
    List<OutputChunk> seen = new ArrayList<>();
    ExecOptions o =
        ExecOptions.builder()
            .timeout(Duration.ofMinutes(2))
            .maxOutputBytes(0)
            .workdir("project")
            .env("CI", "1")
            .env(Map.of("MODE", "x"))
            .stdin(new byte[] {1, 2})
            .onOutput(seen::add)
            .build();

    assertThat(o.timeout()).isEqualTo(Duration.ofMinutes(2));
    assertThat(o.maxOutputBytes()).isZero();
    assertThat(o.workdir()).isEqualTo("project");
    assertThat(o.env()).isEqualTo(Map.of("CI", "1", "MODE", "x"));
    assertThat(o.stdin()).containsExactly(1, 2);
    assertThat(o.onOutput()).isNotNull();
  }

  @Test
  void stdinIsCopiedBothWays() {
    byte[] data = {1, 2, 3};
    ExecOptions o = ExecOptions.builder().stdin(data).build();
    data[0] = 9;
    assertThat(o.stdin()).containsExactly(1, 2, 3);
    o.stdin()[1] = 9;
    assertThat(o.stdin()).containsExactly(1, 2, 3);
  }

  @Test
  void nonPositiveTimeoutIsRefused() {
    assertThatThrownBy(() -> ExecOptions.builder().timeout(Duration.ZERO).build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("timeout must be positive");
    assertThatThrownBy(() -> ExecOptions.builder().timeout(Duration.ofSeconds(-3)).build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("timeout");
  }

  @Test
  void negativeMaxOutputIsRefused() {
    assertThatThrownBy(() -> ExecOptions.builder().maxOutputBytes(-1).build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("maxOutputBytes");
  }

  @Test
  void badEnvNameIsRefused() {
    assertThatThrownBy(() -> ExecOptions.builder().env("1X", "v").build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("environment variable name '1X'");
    assertThatThrownBy(() -> ExecOptions.builder().env(Map.of("A-B", "v")).build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("'A-B'");
  }

  @Test
  void stdinIsCappedAtFourMebibytes() {
    assertThat(ExecOptions.builder().stdin(new byte[SandboxConfig.MAX_STDIN_BYTES]).build().stdin())
        .hasSize(4 << 20);
    assertThatThrownBy(
            () -> ExecOptions.builder().stdin(new byte[SandboxConfig.MAX_STDIN_BYTES + 1]).build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("stdin")
        .hasMessageContaining("files().write()");
  }

  @Test
  void envMapIsImmutable() {
    ExecOptions o = ExecOptions.builder().env("A", "1").build();
    assertThatThrownBy(() -> o.env().put("B", "2"))
        .isInstanceOf(UnsupportedOperationException.class);
  }
}
