package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ConfigException;
import io.agentnest.NetworkPolicy;
import io.agentnest.RequestRule;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code network.credentials} in agentnest.yaml, in the issue's form, and its errors. */
class CredentialsConfigTest {
  private static final String TOKEN = "ghp_fromTheHostEnvironment0123456789";
  private static final String KEY = "sk-fromTheHostEnvironment-abcdef";
  private static final Map<String, String> ENV =
      Map.of("GITHUB_TOKEN", TOKEN, "OPENAI_API_KEY", KEY, "OTHER_KEY", KEY + "2");

  private static final String GOOD =
      """
      version: 1
      defaults:
        network:
          allow: [api.github.com, "*.openai.com"]
          credentials:
            - host: api.github.com
              header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
              rules:
                - methods: [GET, head]
                  path: /repos/acme/
                - path: /user
            - host: api.openai.com
              placeholder: OPENAI_API_KEY
      """;

  static NetworkPolicy network(String yaml) {
    return AgentNestConfig.parse(yaml, "agentnest.yaml", ENV).sandboxConfig().network();
  }

  static String errorOf(String yaml) {
    try {
      AgentNestConfig.parse(yaml, "agentnest.yaml", ENV);
    } catch (ConfigException e) {
      return e.getMessage();
    }
    throw new AssertionError("expected a ConfigException for:\n" + yaml);
  }

  @Test
  void theIssuesFormInjectsAHeaderSwapsAPlaceholderAndRestrictsRequests() {
    NetworkPolicy p = network(GOOD);

    assertThat(p.rules()).containsExactly("api.github.com", "*.openai.com");
    assertThat(p.injections())
        .singleElement()
        .satisfies(
            i -> {
              assertThat(i.host()).isEqualTo("api.github.com");
              assertThat(i.header().name()).isEqualTo("Authorization");
              assertThat(i.header().value()).isEqualTo("Bearer " + TOKEN);
              assertThat(i.header().secretName()).isEqualTo("GITHUB_TOKEN");
            });
    assertThat(p.placeholders())
        .singleElement()
        .satisfies(
            ph -> {
              assertThat(ph.host()).isEqualTo("api.openai.com");
              assertThat(ph.env()).isEqualTo("OPENAI_API_KEY");
              assertThat(ph.secret().reveal()).isEqualTo(KEY);
            });
    assertThat(p.requestRules("api.github.com"))
        .containsExactly(RequestRule.of("/repos/acme/", "GET", "HEAD"), RequestRule.of("/user"));
    assertThat(p.requestRules("api.openai.com")).isEmpty();
  }

  @Test
  void theEffectiveConfigNamesSecretsNeverValuesAndReadsBackToTheSamePolicy() {
    AgentNestConfig c = AgentNestConfig.parse(GOOD, "agentnest.yaml", ENV);

    String yaml = c.effectiveYaml(null);
    String json = c.effectiveJson(null);

    assertThat(yaml + json).doesNotContain(TOKEN).doesNotContain(KEY);
    assertThat(yaml).contains("${secret:GITHUB_TOKEN}").contains("OPENAI_API_KEY");
    assertThat(AgentNestConfig.parse(yaml, "round.yaml", ENV).sandboxConfig().network())
        .isEqualTo(c.sandboxConfig().network());
    assertThat(AgentNestConfig.parse(json, "round.json", ENV).sandboxConfig().network())
        .isEqualTo(c.sandboxConfig().network());
  }

  @Test
  void aPlaceholderMayReadASecretOfAnotherName() {
    NetworkPolicy p =
        network(
            """
            version: 1
            defaults:
              network:
                allow: "api.openai.com"
                credentials:
                  - {host: api.openai.com, placeholder: OPENAI_API_KEY, secret: OTHER_KEY}
            """);
    assertThat(p.placeholders().get(0).env()).isEqualTo("OPENAI_API_KEY");
    assertThat(p.placeholders().get(0).secretName()).isEqualTo("OTHER_KEY");
    assertThat(p.placeholders().get(0).secret().reveal()).isEqualTo(KEY + "2");
  }

  @Test
  void anUnsetSecretSaysWhichVariableToExportAndWhere() {
    String e =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    header: "Authorization: Bearer ${secret:NOT_SET_ANYWHERE}"
            """);
    assertThat(e)
        .startsWith("agentnest.yaml:6:")
        .contains("defaults.network.credentials[0]")
        .contains("export NOT_SET_ANYWHERE=")
        .contains("never written in the configuration file");
  }

  @Test
  void aHostNoAllowRuleCoversIsBlamedOnItsEntry() {
    String e =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                  - host: api.openai.com
                    placeholder: OPENAI_API_KEY
            """);
    assertThat(e)
        .startsWith("agentnest.yaml:8:")
        .contains("defaults.network.credentials[1]")
        .contains("api.openai.com")
        .contains("not allowed by any network.allow rule");
  }

  @Test
  void anUnknownKeySuggestsTheNearestOne() {
    String e =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    headr: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
            """);
    assertThat(e)
        .startsWith("agentnest.yaml:7:9:")
        .contains("defaults.network.credentials[0].headr")
        .contains("unknown key")
        .contains("'header'");
  }

  @Test
  void headerAndPlaceholderTogetherOrNeitherAreRefused() {
    String both =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                    placeholder: OPENAI_API_KEY
            """);
    assertThat(both).startsWith("agentnest.yaml:6:").contains("not both");

    String neither =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
            """);
    assertThat(neither).contains("no credential").contains("placeholder: NAME");

    String noHost =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - placeholder: OPENAI_API_KEY
            """);
    assertThat(noHost).contains("no host");
  }

  @Test
  void aHeaderWithoutASecretReferenceOrAWrongShapeIsRefused() {
    assertThat(
            errorOf(
                """
                version: 1
                defaults:
                  network:
                    allow: [api.github.com]
                    credentials:
                      - host: api.github.com
                        header: "Authorization: Bearer ghp_pastedRightIntoTheFile"
                """))
        .contains("names no secret")
        .contains("${secret:");
    assertThat(
            errorOf(
                """
                version: 1
                defaults:
                  network:
                    allow: [api.github.com]
                    credentials:
                      host: api.github.com
                """))
        .startsWith("agentnest.yaml:6:")
        .contains("expected a list of credential rules");
  }

  @Test
  void requestRulesAreCheckedWithTheirLine() {
    String traversal =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                    rules:
                      - {methods: [GET], path: /repos/acme/../}
            """);
    assertThat(traversal)
        .startsWith("agentnest.yaml:9:")
        .contains("credentials[0].rules[0]")
        .contains("'..' segment");

    String badKey =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                    rules:
                      - {method: [GET], path: /repos/}
            """);
    assertThat(badKey).contains("unknown key").contains("'methods'");

    String badMethod =
        errorOf(
            """
            version: 1
            defaults:
              network:
                allow: [api.github.com]
                credentials:
                  - host: api.github.com
                    header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                    rules: [{methods: ["GET /x"], path: /repos/}]
            """);
    assertThat(badMethod).contains("is not an HTTP method");
  }

  @Test
  void credentialsCannotComeFromAnEnvironmentOverride() {
    NetworkPolicy p =
        AgentNestConfig.parse(
                "version: 1\n",
                "agentnest.yaml",
                Map.of("AGENTNEST_NETWORK_CREDENTIALS", "[{host: x, placeholder: GITHUB_TOKEN}]"))
            .sandboxConfig()
            .network();
    assertThat(p.hasCredentials()).isFalse();
    assertThat(AgentNestConfig.environmentVariables())
        .doesNotContainKey("AGENTNEST_NETWORK_CREDENTIALS");
  }

  @Test
  void askDecisionsAreRememberedUnlessTheFileSaysToAskEveryTime() {
    String yaml =
        "version: 1\ndefaults:\n  network:\n    on_unknown_host: ask\n"
            + "    remember_decisions: false\n";
    assertThat(network(yaml).remembersDecisions()).isFalse();
    assertThat(
            network("version: 1\ndefaults:\n  network:\n    on_unknown_host: ask\n")
                .remembersDecisions())
        .isTrue();
    assertThat(AgentNestConfig.parse(yaml, "x", ENV).effectiveYaml(null))
        .contains("remember_decisions: false");
  }
}
