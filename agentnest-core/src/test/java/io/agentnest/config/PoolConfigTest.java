package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.PoolOptions;
import io.agentnest.PoolOptions.Exhaustion;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PoolConfigTest {
  private static final String FULL =
      """
      version: 1
      defaults:
        pool:
          name: py
          min_idle: 3
          max_idle: 5
          max_total: 20
          max_uses: 1
          idle_ttl: 10m
          refill_concurrency: 2
          on_exhausted: fail
          max_wait: 5s
      profiles:
        k8s:
          backend: kubernetes
          kubernetes:
            pool: { template: default, min_idle: 4 }
        cold:
          image: agentnest/python:latest
      """;

  @Test
  void everyPoolKeyReachesThePoolOptions() {
    PoolOptions p = AgentNestConfig.parse(FULL, "agentnest.yaml").pool(null).orElseThrow();
    assertThat(p)
        .isEqualTo(
            PoolOptions.builder()
                .name("py")
                .minIdle(3)
                .maxIdle(5)
                .maxTotal(20)
                .maxUses(1)
                .idleTtl(Duration.ofMinutes(10))
                .refillConcurrency(2)
                .onExhausted(Exhaustion.FAIL)
                .maxWait(Duration.ofSeconds(5))
                .build());
  }

  @Test
  void theKubernetesPoolBlockIsTheSamePoolWithTemplateAsItsName() {
    AgentNestConfig config =
        AgentNestConfig.parse(
            "version: 1\ndefaults:\n  kubernetes:\n    pool: { template: web, min_idle: 4 }\n",
            "x");
    PoolOptions p = config.pool(null).orElseThrow();
    assertThat(p.name()).isEqualTo("web");
    assertThat(p.minIdle()).isEqualTo(4);
    assertThat(p.maxIdle()).isEqualTo(4);
  }

  @Test
  void aProfileOverlaysTheDefaultsPoolAndTwoNamesForOneSettingMustAgree() {
    AgentNestConfig config = AgentNestConfig.parse(FULL, "agentnest.yaml");
    assertThatThrownBy(() -> config.pool("k8s"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining(
            "pool.name (py) and kubernetes.pool.template (default) name the same setting: keep"
                + " one");
    PoolOptions cold = config.pool("cold").orElseThrow();
    assertThat(cold.minIdle()).isEqualTo(3);
  }

  @Test
  void noPoolKeyMeansNoPool() {
    assertThat(AgentNestConfig.parse("version: 1\n", "x").pool(null)).isEmpty();
    assertThat(
            AgentNestConfig.parse("version: 1\nprofiles:\n  a:\n    pool: {min_idle: 1}\n", "x")
                .pool(null))
        .isEmpty();
  }

  @Test
  void contradictingSettingsNameTheFileAndBothKeys() {
    String yaml = "version: 1\ndefaults:\n  pool: { min_idle: 4, max_idle: 2 }\n";
    assertThatThrownBy(() -> AgentNestConfig.parse(yaml, "agentnest.yaml").pool(null))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("agentnest.yaml:3:")
        .hasMessageContaining("pool max_idle 2 is below min_idle 4: raise max_idle");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      textBlock =
          """
          defaults:\\n  pool:\\n    max_uses: 2 | agentnest.yaml:3:15: defaults.pool.max_uses: max_uses 2 is not supported: only 1 is (a used sandbox is never handed out again)
          defaults:\\n  pool:\\n    min_idle: -1 | agentnest.yaml:3:15: defaults.pool.min_idle: min_idle -1 is out of range: give 0 to 1000
          defaults:\\n  pool:\\n    on_exhausted: block | agentnest.yaml:3:19: defaults.pool.on_exhausted: 'block' is not supported; supported: wait, fail (when max_total are out: wait up to max_wait for one, or fail at once)
          defaults:\\n  pool:\\n    name: My_Pool | agentnest.yaml:3:11: defaults.pool.name: 'My_Pool' cannot name a pool: it goes into labels, so use lower-case letters, digits and '-' (at most 40, starting and ending with a letter or digit), e.g. default
          defaults:\\n  pool:\\n    min_idel: 2 | agentnest.yaml:3:5: defaults.pool.min_idel: unknown key; did you mean 'min_idle'?
          """)
  void badPoolKeysNameFileLineColumnAndTheFix(String yaml, String message) {
    assertThat(AgentNestConfigTest.errorOf(yaml.replace("\\n", "\n"))).isEqualTo(message);
  }

  @Test
  void aSectionWithoutAPoolStartsNone() {
    assertThat(AgentNestConfig.parse("version: 1\n", "x").startPool(null)).isEmpty();
  }
}
