package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import java.time.Duration;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

class SuggestionsTest {
  static final List<String> LIMITS = Schema.keysUnder("limits");

  @Test
  void levenshteinDistance() {
    assertThat(Suggestions.distance("memroy", "memory")).isEqualTo(2);
    assertThat(Suggestions.distance("netwrok", "network")).isEqualTo(2);
    assertThat(Suggestions.distance("", "abc")).isEqualTo(3);
    assertThat(Suggestions.distance("same", "same")).isZero();
  }

  @Test
  void suggestsNearKeysAndClearBests() {
    assertThat(Suggestions.nearest("memroy", LIMITS)).contains("memory");
    assertThat(Suggestions.nearest("Memory", LIMITS)).contains("memory");
    assertThat(Suggestions.nearest("tmp-size", LIMITS)).contains("tmp_size");
    assertThat(Suggestions.nearest("timeout", LIMITS)).isEmpty(); // three equally far
    assertThat(Suggestions.nearest("workspace", LIMITS)).contains("workspace_size");
    assertThat(Suggestions.nearest("zzzzzz", LIMITS)).isEmpty();
    assertThat(Suggestions.nearest("x", List.of())).isEmpty();
  }

  @Test
  void schemaGroupsAndKeys() {
    assertThat(Schema.keysUnder(""))
        .containsExactly(
            "backend",
            "image",
            "runtime",
            "user",
            "workdir",
            "env",
            "labels",
            "limits",
            "budgets",
            "security",
            "network",
            "approvals",
            "pool",
            "remote",
            "kubernetes");
    assertThat(Schema.groups())
        .containsExactly(
            "limits",
            "budgets",
            "security",
            "network",
            "approvals",
            "pool",
            "remote",
            "kubernetes",
            "kubernetes.quota",
            "kubernetes.pool");
    assertThat(Schema.keysUnder("kubernetes"))
        .containsExactly(
            "context", "namespace_prefix", "runtime_class", "api", "tenant", "quota", "pool");
    assertThat(Schema.keysUnder("kubernetes.quota")).containsExactly("pods", "cpu", "memory");
    assertThat(Schema.keysUnder("budgets"))
        .containsExactly(
            "tunnels_per_second",
            "tunnel_burst",
            "asks_per_second",
            "ask_burst",
            "asks_per_call",
            "destroy_after_refusals");
    assertThat(Schema.keysUnder("security"))
        .containsExactly("read_only_root", "read_only_workspace", "seccomp_profile");
  }

  @Property(tries = 200)
  void limitsSurviveTheEffectiveYamlRoundTrip(
      @ForAll @LongRange(min = 16, max = 1 << 20) long memoryMiB,
      @ForAll @LongRange(min = 8, max = 100_000) long pids,
      @ForAll @LongRange(min = 1, max = 86_400_000L) long execMillis,
      @ForAll @IntRange(min = 1, max = 4096) int cpuQuarters) {
    String yaml =
        "defaults:\n  limits:\n    memory: "
            + memoryMiB
            + "m\n    pids: "
            + pids
            + "\n    exec_timeout: "
            + execMillis
            + "ms\n    cpus: "
            + cpuQuarters / 4.0
            + "\n";
    SandboxConfig c = AgentNestConfig.parse(yaml, "p").sandboxConfig();
    assertThat(c.memoryBytes()).isEqualTo(memoryMiB << 20);
    assertThat(c.execTimeout()).isEqualTo(Duration.ofMillis(execMillis));
    SandboxConfig back =
        AgentNestConfig.parse(AgentNestConfig.parse(yaml, "p").effectiveYaml(null), "e")
            .sandboxConfig();
    assertThat(back).usingRecursiveComparison().isEqualTo(c);
  }
}
