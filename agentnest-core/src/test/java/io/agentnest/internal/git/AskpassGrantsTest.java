package io.agentnest.internal.git;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Secret;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AskpassGrantsTest {
  static final String TOKEN = "tok-0123456789abcdef";
  final List<Map<String, ?>> audited = new ArrayList<>();
  final AskpassGrants grants = new AskpassGrants(null, (t, d) -> audited.add(d), null, () -> {});

  AskpassGrants.Grant grant() {
    return grants.open(URI.create("https://git.example.com/org/app.git"), "bot", Secret.of(TOKEN));
  }

  @Test
  void anOpenGrantAnswersItsRemotesUsernameAndPassword() {
    try (AskpassGrants.Grant g = grant()) {
      assertThat(grants.decide(g.nonce(), "Username for 'https://git.example.com': ").value())
          .isEqualTo("bot");
      assertThat(grants.decide(g.nonce(), "Password for 'https://bot@git.example.com': ").value())
          .isEqualTo(TOKEN);
      assertThat(g.nonce()).hasSize(32).matches("[0-9a-f]+");
    }
  }

  @Test
  void aClosedGrantsNonceIsWorthNothing() {
    AskpassGrants.Grant g = grant();
    g.close();
    AskpassGrants.Decision d =
        grants.decide(g.nonce(), "Password for 'https://bot@git.example.com': ");
    assertThat(d.value()).isNull();
    assertThat(d.refusal()).isEqualTo("no git operation of the host is asking now");
  }

  @Test
  void aGuessedOrEmptyNonceIsRefused() {
    try (AskpassGrants.Grant g = grant()) {
      for (String nonce : List.of("", "0".repeat(32), g.nonce().substring(1), g.nonce() + "0")) {
        assertThat(grants.decide(nonce, "Password for 'https://git.example.com': ").value())
            .isNull();
      }
    }
  }

  @Test
  void anotherHostPortOrSchemeGetsNothing() {
    try (AskpassGrants.Grant g = grant()) {
      for (String prompt :
          List.of(
              "Password for 'https://bot@evil.example.com': ",
              "Password for 'https://bot@git.example.com.evil.test': ",
              "Password for 'http://bot@git.example.com': ",
              "Password for 'https://bot@git.example.com:8443': ",
              "Password for 'https://other@git.example.com': ",
              "Enter the token please: ",
              "")) {
        AskpassGrants.Decision d = grants.decide(g.nonce(), prompt);
        assertThat(d.value()).as(prompt).isNull();
      }
      // The default port written out is the same remote.
      assertThat(
              grants.decide(g.nonce(), "Password for 'https://bot@git.example.com:443': ").value())
          .isEqualTo(TOKEN);
    }
  }

  @Test
  void anOperationIsAnsweredABoundedNumberOfTimes() {
    try (AskpassGrants.Grant g = grant()) {
      int answered = 0;
      for (int i = 0; i < 20; i++) {
        if (grants.decide(g.nonce(), "Password for 'https://git.example.com': ").value() != null) {
          answered++;
        }
      }
      assertThat(answered).isEqualTo(AskpassGrants.MAX_ANSWERS);
    }
  }
}
