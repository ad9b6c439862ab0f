package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The {@code kubernetes:} block of a settings section (issue 19). */
class KubernetesConfigTest {
  static final String ISSUE_EXAMPLE =
      """
      version: 1
      defaults:
        backend: kubernetes
        kubernetes:
          context: prod
          namespace_prefix: agentnest-
          runtime_class: gvisor
          tenant: search
          quota: { pods: 50, cpu: "16", memory: 64Gi }
      profiles:
        batch:
          kubernetes:
            tenant: batch
            quota: { pods: 5 }
        local:
          backend: docker
          runtime: runc
      """;

  @Test
  void theIssuesBlockReachesTheBackendOptionsAndTheSandboxConfig() {
    AgentNestConfig config = AgentNestConfig.parse(ISSUE_EXAMPLE, "agentnest.yaml");

    assertThat(config.kubernetes(null))
        .isEqualTo(
            new KubernetesOptions(
                "prod",
                "agentnest-",
                "gvisor",
                "search",
                new KubernetesOptions.Quota(50, "16", "64Gi")));
    SandboxConfig sandbox = config.sandboxConfig();
    assertThat(sandbox.backend()).isEqualTo("kubernetes");
    assertThat(sandbox.tenant()).isEqualTo("search");
    assertThat(sandbox.runtime()).isEqualTo("gvisor");
  }

  @Test
  void theApiKeyChoosesAgentSandboxObjectsAndAnUnknownApiNamesBothChoices() {
    String yaml =
        """
        version: 1
        defaults:
          backend: kubernetes
          kubernetes:
            api: %s
        """;
    assertThat(
            AgentNestConfig.parse(yaml.formatted("agent-sandbox"), "agentnest.yaml")
                .kubernetes(null)
                .api())
        .isEqualTo("agent-sandbox");
    assertThat(AgentNestConfig.parse(ISSUE_EXAMPLE, "agentnest.yaml").kubernetes(null).api())
        .isNull();
    assertThatThrownBy(() -> AgentNestConfig.parse(yaml.formatted("crd"), "agentnest.yaml"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("agentnest.yaml:5")
        .hasMessageContaining("pods")
        .hasMessageContaining("agent-sandbox");
  }

  @Test
  void aProfileOverlaysTheDefaultsBlockKeyByKey() {
    AgentNestConfig config = AgentNestConfig.parse(ISSUE_EXAMPLE, "agentnest.yaml");

    KubernetesOptions batch = config.kubernetes("batch");
    assertThat(batch.tenant()).isEqualTo("batch");
    assertThat(batch.context()).isEqualTo("prod");
    assertThat(batch.quota()).isEqualTo(new KubernetesOptions.Quota(5, "16", "64Gi"));
    assertThat(config.sandboxConfig("batch").tenant()).isEqualTo("batch");
  }

  @Test
  void runtimeClassIsTheRuntimeOnKubernetesOnly() {
    AgentNestConfig config = AgentNestConfig.parse(ISSUE_EXAMPLE, "agentnest.yaml");

    // The docker profile keeps its own runtime; the block stays for the Kubernetes backend.
    assertThat(config.sandboxConfig("local").runtime()).isEqualTo("runc");
    assertThat(config.kubernetes("local").runtimeClass()).isEqualTo("gvisor");
  }

  @Test
  void environmentVariablesOverrideTheFileKeyByKey() {
    AgentNestConfig config =
        AgentNestConfig.parse(
            ISSUE_EXAMPLE,
            "agentnest.yaml",
            Map.of(
                "AGENTNEST_KUBERNETES_TENANT", "ops",
                "AGENTNEST_KUBERNETES_QUOTA_MEMORY", "8Gi",
                "AGENTNEST_BACKEND", "kubernetes"));

    assertThat(config.kubernetes(null).tenant()).isEqualTo("ops");
    assertThat(config.kubernetes(null).quota())
        .isEqualTo(new KubernetesOptions.Quota(50, "16", "8Gi"));
    assertThat(config.kubernetes(null).context()).isEqualTo("prod");
    assertThat(config.sandboxConfig().tenant()).isEqualTo("ops");
    assertThat(AgentNestConfig.environmentVariables())
        .containsEntry("AGENTNEST_KUBERNETES_NAMESPACE_PREFIX", "kubernetes.namespace_prefix")
        .containsEntry("AGENTNEST_KUBERNETES_QUOTA_PODS", "kubernetes.quota.pods");
  }

  @Test
  void noBlockMeansNothingSet() {
    assertThat(AgentNestConfig.parse("version: 1\n", "x").kubernetes(null))
        .isEqualTo(KubernetesOptions.NONE);
    assertThat(AgentNestConfig.parse("version: 1\n", "x").sandboxConfig().tenant()).isNull();
  }

  @Test
  void theEffectiveConfigurationShowsTheBlockAndParsesBackToIt() {
    AgentNestConfig config = AgentNestConfig.parse(ISSUE_EXAMPLE, "agentnest.yaml");
    String yaml = config.effectiveYaml("batch");

    assertThat(yaml)
        .contains("  kubernetes:\n    context: prod")
        .contains("    quota:\n      pods: 5  # profiles.batch.kubernetes.quota.pods")
        .contains("    pool:\n      # template: not set")
        .doesNotContain("kubernetes.quota:");
    AgentNestConfig back = AgentNestConfig.parse(yaml, "effective.yaml");
    assertThat(back.kubernetes(null)).isEqualTo(config.kubernetes("batch"));
    assertThat(back.sandboxConfig())
        .usingRecursiveComparison()
        .ignoringFields("approvalHandler")
        .isEqualTo(config.sandboxConfig("batch"));
    AgentNestConfig json = AgentNestConfig.parse(config.effectiveJson("batch"), "effective.json");
    assertThat(json.kubernetes(null)).isEqualTo(config.kubernetes("batch"));
  }

  // Errors: file:line:column: path: the problem and the fix

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      textBlock =
          """
          defaults:\\n  kubernetes:\\n    pool: { template: Default, min_idle: 4 } | agentnest.yaml:3:23: defaults.kubernetes.pool.template: 'Default' cannot name a pool: it goes into labels, so use lower-case letters, digits and '-' (at most 40, starting and ending with a letter or digit), e.g. default
          defaults:\\n  kubernetes:\\n    namespace_prefix: Agent_ | agentnest.yaml:3:23: defaults.kubernetes.namespace_prefix: 'Agent_' cannot start a namespace name: use lower-case letters, digits and '-', starting with a letter or digit, at most 40, e.g. agentnest-
          defaults:\\n  kubernetes:\\n    tenant: Search | agentnest.yaml:3:13: defaults.kubernetes.tenant: tenant 'Search' is invalid: it names a Kubernetes namespace, so use lower-case letters, digits and '-', starting and ending with a letter or digit (at most 63), e.g. search
          defaults:\\n  kubernetes:\\n    quota: { memory: lots } | agentnest.yaml:3:22: defaults.kubernetes.quota.memory: 'lots' is not a Kubernetes quantity for the memory quota: give a number with an optional suffix (m, Ki, Mi, Gi, ...), e.g. 64Gi
          defaults:\\n  kubernetes:\\n    quota: { cpu: 16 cores } | agentnest.yaml:3:19: defaults.kubernetes.quota.cpu: '16 cores' is not a Kubernetes quantity for the cpu quota: give a number with an optional suffix (m, Ki, Mi, Gi, ...), e.g. 16
          defaults:\\n  kubernetes:\\n    quota: { pods: 0 } | agentnest.yaml:3:20: defaults.kubernetes.quota.pods: a quota of 0 pods is out of range: give 1 to 100000, e.g. 50
          defaults:\\n  kubernetes:\\n    quota: { pods: many } | agentnest.yaml:3:20: defaults.kubernetes.quota.pods: expected an integer, e.g. 50; got 'many'
          defaults:\\n  kubernetes:\\n    quota: 50 | agentnest.yaml:3:12: defaults.kubernetes.quota: expected a map, e.g. quota: {pods: 50}; got '50'
          defaults:\\n  kubernetes:\\n    namspace_prefix: a- | agentnest.yaml:3:5: defaults.kubernetes.namspace_prefix: unknown key; did you mean 'namespace_prefix'?
          defaults:\\n  kubernetes:\\n    quota: { gpu: 1 } | agentnest.yaml:3:14: defaults.kubernetes.quota.gpu: unknown key; did you mean 'cpu'?
          defaults:\\n  kubernetes:\\n    runtime_class: ' ' | agentnest.yaml:3:20: defaults.kubernetes.runtime_class: runtime_class is empty: leave the key out for the default
          defaults:\\n  kubernetes: [prod] | agentnest.yaml:2:15: defaults.kubernetes: expected a map, e.g. kubernetes: {context: prod}; got a list
          defaults:\\n  tenant: search | agentnest.yaml:2:3: defaults.tenant: unknown key; did you mean 'tenant' (under 'kubernetes:')?
          """)
  void errorsNameFileLineColumnPathAndTheFix(String yaml, String message) {
    assertThat(AgentNestConfigTest.errorOf(yaml.replace("\\n", "\n"))).isEqualTo(message);
  }

  @Test
  void aPoolFromTheEnvironmentIsTakenLikeTheBlock() {
    AgentNestConfig config =
        AgentNestConfig.parse(
            "version: 1\n", "x", Map.of("AGENTNEST_KUBERNETES_POOL_MIN_IDLE", "4"));
    assertThat(config.pool(null)).hasValueSatisfying(p -> assertThat(p.minIdle()).isEqualTo(4));
  }

  @Test
  void theBuilderTakesATenantAndRefusesOneThatCannotNameANamespace() {
    SandboxConfig c = SandboxConfig.builder().backend("kubernetes").tenant("search").build();
    assertThat(c.tenant()).isEqualTo("search");
    assertThat(c.toBuilder().build().tenant()).isEqualTo("search");
    assertThatThrownBy(() -> SandboxConfig.builder().tenant("-bad").build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("tenant '-bad' is invalid")
        .hasMessageContaining("e.g. search");
  }
}
