package io.agentnest.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.config.KubernetesOptions;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KubeSettingsTest {
  @Test
  void defaultsPutTheDefaultTenantInItsOwnNamespace() {
    KubeSettings s = KubeSettings.of(Map.of());
    assertThat(s.namespaceOf(null)).isEqualTo("agentnest-default");
    assertThat(s.namespaceOf("search")).isEqualTo("agentnest-search");
    assertThat(s.allowUnisolatedNetwork()).isFalse();
    assertThat(s.allowUnenforcedPids()).isFalse();
    assertThat(s.imagePullPolicy()).isEqualTo("IfNotPresent");
  }

  @Test
  void theApiIsPodsUnlessAgentSandboxIsChosenAndAnythingElseIsRefused() {
    assertThat(KubeSettings.of(Map.of()).agentSandbox()).isFalse();
    assertThat(KubeSettings.of(Map.of("API", "agent-sandbox")).agentSandbox()).isTrue();
    assertThat(KubeSettings.of(Map.of("API", "pods")).agentSandbox()).isFalse();
    assertThatThrownBy(() -> KubeSettings.of(Map.of("API", "Sandbox")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("AGENTNEST_KUBERNETES_API")
        .hasMessageContaining("agent-sandbox");
  }

  @Test
  void aTenantThatCannotNameANamespaceIsRefusedWithWhatIsAllowed() {
    KubeSettings s = KubeSettings.of(Map.of());
    for (String bad : new String[] {"Search", "../x", "a_b", "-a", "x".repeat(60), ""}) {
      assertThatThrownBy(() -> s.namespaceOf(bad))
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("lower-case letters");
    }
  }

  @Test
  void badNumbersAndPoliciesNameTheSettingAndTheFix() {
    assertThatThrownBy(() -> KubeSettings.of(Map.of("QUOTA_PODS", "many")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("AGENTNEST_KUBERNETES_QUOTA_PODS");
    assertThatThrownBy(() -> KubeSettings.of(Map.of("NODE_PIDS_LIMIT", "-1")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("node_pids_limit");
    assertThatThrownBy(() -> KubeSettings.of(Map.of("IMAGE_PULL_POLICY", "Sometimes")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("IfNotPresent, Never, Always");
    assertThatThrownBy(() -> KubeSettings.of(Map.of("NAMESPACE_PREFIX", "Agent_")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("namespace_prefix");
  }

  @Test
  void unenforcedPidsAreAllowedOnlyWhenTheAdministratorSaysTrue() {
    assertThat(KubeSettings.of(Map.of("ALLOW_UNENFORCED_PIDS", "true")).allowUnenforcedPids())
        .isTrue();
    assertThat(KubeSettings.of(Map.of("ALLOW_UNENFORCED_PIDS", "yes")).allowUnenforcedPids())
        .isFalse();
  }

  @Test
  void theConfigFilesBlockIsUsedWhereTheEnvironmentSetsNothing() {
    KubernetesOptions file =
        AgentNestConfig.parse(
                """
                defaults:
                  kubernetes:
                    context: prod
                    namespace_prefix: team-
                    tenant: search
                    quota: { pods: 50, cpu: "16", memory: 64Gi }
                """,
                "agentnest.yaml")
            .kubernetes(null);

    KubeSettings fromFile = KubeSettings.layered(k -> null, file);
    assertThat(fromFile.context()).isEqualTo("prod");
    assertThat(fromFile.namespaceOf(null)).isEqualTo("team-search");
    assertThat(fromFile.quota()).isEqualTo(new KubeSettings.Quota(50, "16", "64Gi"));

    KubeSettings overridden =
        KubeSettings.layered(Map.of("TENANT", "ops", "QUOTA_PODS", "5")::get, file);
    assertThat(overridden.namespaceOf(null)).isEqualTo("team-ops");
    assertThat(overridden.quota()).isEqualTo(new KubeSettings.Quota(5, "16", "64Gi"));
    assertThat(overridden.context()).isEqualTo("prod");
  }

  @Test
  void noBlockGivesTheBuiltInDefaults() {
    assertThat(KubeSettings.layered(k -> null, KubernetesOptions.NONE))
        .isEqualTo(KubeSettings.of(Map.of()));
  }
}
