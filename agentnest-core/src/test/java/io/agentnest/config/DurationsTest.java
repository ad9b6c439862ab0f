package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** One duration syntax for YAML and the CLI: what one accepts, the other does too. */
class DurationsTest {
  @Test
  void everyUnitOfTheSyntaxParses() {
    assertThat(Durations.parse("500ms")).contains(Duration.ofMillis(500));
    assertThat(Durations.parse("30")).contains(Duration.ofSeconds(30));
    assertThat(Durations.parse("2m")).contains(Duration.ofMinutes(2));
    assertThat(Durations.parse(" 1H ")).contains(Duration.ofHours(1));
    assertThat(Durations.parse("1d")).contains(Duration.ofDays(1));
  }

  @Test
  void anythingElseIsNotADuration() {
    assertThat(Durations.parse("1w")).isEmpty();
    assertThat(Durations.parse("-5s")).isEmpty();
    assertThat(Durations.parse("1.5h")).isEmpty();
    assertThat(Durations.parse("9999999999999s")).isEmpty();
  }

  @Test
  void yamlTakesWhatTheSyntaxTakes() {
    AgentNestConfig c =
        AgentNestConfig.parse("version: 1\ndefaults:\n  limits:\n    exec_timeout: 1d\n", "t.yaml");
    assertThat(c.sandboxConfig(null).execTimeout()).isEqualTo(Duration.ofDays(1));
  }
}
