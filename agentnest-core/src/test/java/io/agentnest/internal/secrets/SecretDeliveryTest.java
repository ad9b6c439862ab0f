package io.agentnest.internal.secrets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.internal.egress.JavaTrustStore;
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

  @Test
  void aPooledSandboxGetsTheUsersJavaToolOptionsWithOursAppendedAtHandOut() {
    NetworkPolicy credentials =
        NetworkPolicy.allow("api.example.com")
            .inject("api.example.com", Header.bearer(Secret.of("token-value-1234")))
            .build();
    SandboxConfig userSet =
        SandboxConfig.builder().network(credentials).env("JAVA_TOOL_OPTIONS", "-Xmx256m").build();
    SandboxConfig noCredentials =
        SandboxConfig.builder()
            .network(NetworkPolicy.allow("api.example.com").build())
            .env("JAVA_TOOL_OPTIONS", "-Xmx256m")
            .build();

    assertThat(SecretDelivery.forHandOut(userSet).payloadText())
        .contains("\"JAVA_TOOL_OPTIONS\":\"-Xmx256m " + JavaTrustStore.OPTIONS + "\"");
    assertThat(SecretDelivery.forHandOut(noCredentials).payloadText())
        .contains("\"JAVA_TOOL_OPTIONS\":\"-Xmx256m\"");
  }
}
