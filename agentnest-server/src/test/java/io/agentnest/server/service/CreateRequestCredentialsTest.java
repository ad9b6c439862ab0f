package io.agentnest.server.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.NetworkPolicy;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Wire;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A tenant's create request can never name a secret from the server's environment. */
class CreateRequestCredentialsTest {
  @ParameterizedTest
  @ValueSource(strings = {"secrets", "inject", "placeholders"})
  void aCreateRequestNamingSecretsIsRefusedWithTheReason(String field) {
    String body =
        "{\"allowHosts\": [\"api.github.com\"], \""
            + field
            + "\": [{\"host\": \"api.github.com\", \"placeholder\": \"GITHUB_TOKEN\"}]}";

    assertThatThrownBy(
            () -> Wire.read(body.getBytes(StandardCharsets.UTF_8), Wire.CreateSandbox.class))
        .isInstanceOfSatisfying(
            ApiException.class,
            e -> {
              assertThat(e.status()).isEqualTo(400);
              assertThat(e.code()).isEqualTo(ErrorCode.POLICY);
              assertThat(e.getMessage()).contains("server's environment");
              assertThat(e.fix()).contains("remove '" + field + "'").contains("credentials");
            });
  }

  @ParameterizedTest
  @ValueSource(strings = {"credentials", "secrets"})
  void otherRequestsKeepTheirUsualUnknownFieldAnswer(String field) {
    assertThatThrownBy(
            () ->
                Wire.read(
                    ("{\"seconds\": 10, \"" + field + "\": 1}").getBytes(StandardCharsets.UTF_8),
                    Wire.Extend.class))
        .isInstanceOfSatisfying(
            ApiException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_FIELD));
  }

  private static Wire.Credential read(String json) {
    return Wire.read(
            ("{\"allowHosts\": [\"api.example.com\"], \"credentials\": [" + json + "]}")
                .getBytes(StandardCharsets.UTF_8),
            Wire.CreateSandbox.class)
        .credentials()
        .get(0);
  }

  @Test
  void aCredentialHeaderCanNameOnlyItsOwnSecretNeverAServerVariable() {
    // The attack: make the server's proxy inject one of the server's own environment variables.
    for (String other : new String[] {"PATH", "AGENTNEST_API_KEY", "HOME"}) {
      Wire.Credential c =
          read(
              "{\"host\": \"api.example.com\", \"name\": \"MINE\", \"value\": \"v-12345678\","
                  + " \"header\": \"Authorization: Bearer ${secret:"
                  + other
                  + "}\"}");
      NetworkPolicy.Builder n = NetworkPolicy.builder().allow("api.example.com");
      assertThatThrownBy(() -> SandboxService.credential(n, c))
          .isInstanceOfSatisfying(
              ApiException.class,
              e -> {
                assertThat(e.status()).isEqualTo(422);
                assertThat(e.getMessage()).contains(other).contains("MINE");
              });
    }
  }

  @Test
  void aCredentialCarriesItsOwnValueIntoTheProxyOnly() {
    NetworkPolicy.Builder n = NetworkPolicy.builder().allow("api.example.com");
    SandboxService.credential(
        n,
        read(
            "{\"host\": \"api.example.com\", \"name\": \"TOKEN\", \"value\": \"tok-12345678\","
                + " \"header\": \"Authorization: Bearer ${secret:TOKEN}\"}"));
    NetworkPolicy p = n.build();
    assertThat(p.injections()).hasSize(1);
    assertThat(p.injections().get(0).header().secret().reveal()).isEqualTo("tok-12345678");
  }

  @Test
  void malformedCredentialsAre422NamingTheField() {
    for (String bad :
        new String[] {
          "{\"host\": \"api.example.com\", \"name\": \"T\"}",
          "{\"host\": \"api.example.com\", \"name\": \"T\", \"value\": \"v-12345678\"}",
          "{\"host\": \"api.example.com\", \"name\": \"T\", \"value\": \"v-12345678\","
              + " \"header\": \"X: ${secret:T}\", \"placeholder\": true}"
        }) {
      NetworkPolicy.Builder n = NetworkPolicy.builder().allow("api.example.com");
      assertThatThrownBy(() -> SandboxService.credential(n, read(bad)))
          .as(bad)
          .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(422));
    }
  }
}
