package io.agentnest.internal.audit;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.NetworkEvent;
import io.agentnest.NetworkEvent.Decision;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NetworkAuditTest {
  private final List<String> types = new ArrayList<>();
  private final List<Map<String, Object>> records = new ArrayList<>();
  private final NetworkAudit audit =
      new NetworkAudit(
          (type, data) -> {
            types.add(type);
            records.add(Map.copyOf(data));
          },
          List.of());

  private static NetworkEvent event(Decision decision, String rule) {
    return new NetworkEvent(
        "sb",
        Instant.now(),
        "CONNECT",
        "ask.test",
        443,
        "127.0.0.1",
        decision,
        rule,
        "why",
        0,
        0,
        Duration.ZERO);
  }

  @Test
  void aRememberedAnswerIsMarkedAndAFreshOneIsNot() {
    audit.accept(event(Decision.APPROVED, "approval"));
    audit.accept(event(Decision.APPROVED, "approval-remembered"));
    audit.accept(event(Decision.DENIED, "approval-denied-remembered"));

    assertThat(records.get(0)).doesNotContainKey("remembered");
    assertThat(records.get(1)).containsEntry("remembered", true);
    // the denial: its network.attempt, then its policy.violation
    assertThat(types)
        .containsExactly(
            "network.attempt", "network.attempt", "network.attempt", "policy.violation");
    assertThat(records.get(2)).containsEntry("remembered", true);
  }

  @Test
  void onlyTheProxysOwnRuleNamesMeanRemembered() {
    assertThat(event(Decision.ALLOWED, "api.x-remembered").remembered()).isFalse();
    assertThat(event(Decision.ALLOWED, null).remembered()).isFalse();
  }
}
