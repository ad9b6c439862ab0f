package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A tenant's create request can never name a secret from the server's environment. */
class CreateRequestCredentialsTest {
  @ParameterizedTest
  @ValueSource(strings = {"credentials", "secrets", "secretEnv", "inject", "placeholders"})
  void aCreateRequestAskingForCredentialsIsRefusedWithTheReason(String field) {
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
              assertThat(e.fix())
                  .contains("remove '" + field + "'")
                  .contains("network.credentials");
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
}
