package io.agentnest.internal.secrets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.spi.SandboxSpec;
import org.junit.jupiter.api.Test;

class SecretDeliveryTest {
  static final String VALUE = "tok-9f8e7d6c5b4a39281706";

  @Test
  void secretsAreNotInTheSpecTheEngineStoresButInTheAgentsInitFrame() {
    SandboxConfig c =
        SandboxConfig.builder()
            .env("MODE", "test")
            .secretEnv("API_TOKEN", Secret.of(VALUE))
            .build();
    SandboxSpec spec = SecurityPolicy.specFor(c);
    assertThat(spec.env()).containsEntry("MODE", "test").doesNotContainKey("API_TOKEN");
    assertThat(spec.env().values()).noneMatch(v -> v.contains(VALUE));
    assertThat(spec.labels().values()).noneMatch(v -> v.contains(VALUE));
    assertThat(spec.command()).noneMatch(v -> v.contains(VALUE));
    assertThat(SecretDelivery.of(c).payloadText())
        .isEqualTo("{\"env\":{\"API_TOKEN\":\"" + VALUE + "\"}}");
  }

  @Test
  void moreThanTheAgentTakesIsRefusedBeforeAContainerExists() {
    SandboxConfig.Builder many = SandboxConfig.builder();
    for (int i = 0; i <= SecretDelivery.MAX_SECRETS; i++) {
      many.secretEnv("S" + i, Secret.of("value-" + i));
    }
    assertThatThrownBy(() -> SecretDelivery.of(many.build()))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("at most 256");
    SandboxConfig big =
        SandboxConfig.builder().secretEnv("BIG", Secret.of("x".repeat(2 << 20))).build();
    assertThatThrownBy(() -> SecretDelivery.of(big))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("upload larger secrets as files");
  }

  @Test
  void withoutSecretsTheInitFrameIsEmpty() {
    assertThat(SecretDelivery.of(SandboxConfig.builder().build()).payloadText())
        .isEqualTo("{\"env\":{}}");
  }
}
