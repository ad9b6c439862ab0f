package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ApprovalPolicy.Action;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ApprovalPolicyTest {
  @Test
  void defaultsAllowEverythingWithAMinuteTimeout() {
    ApprovalPolicy p = ApprovalPolicy.builder().build();
    assertThat(p.fileDeletion()).isEqualTo(Action.ALLOW);
    assertThat(p.systemModification()).isEqualTo(Action.ALLOW);
    assertThat(p.timeout()).isEqualTo(Duration.ofMinutes(1));
    assertThat(p.isInactive()).isTrue();
    assertThat(SandboxConfig.defaults().approvals()).isEqualTo(p);
  }

  @Test
  void strictestActionWins() {
    assertThat(Action.ALLOW.max(Action.ASK)).isEqualTo(Action.ASK);
    assertThat(Action.DENY.max(Action.ASK)).isEqualTo(Action.DENY);
    assertThat(Action.ASK.max(Action.ALLOW)).isEqualTo(Action.ASK);
  }

  @Test
  void badInputsNameTheProblemAndTheFix() {
    assertThatThrownBy(() -> ApprovalPolicy.builder().shell("(", Action.ASK))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("not a valid regular expression")
        .hasMessageContaining("\\Q");
    assertThatThrownBy(() -> ApprovalPolicy.builder().shell(" ", Action.ASK))
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> ApprovalPolicy.builder().python("socket connect", Action.ASK))
        .hasMessageContaining("socket.connect");
    assertThatThrownBy(() -> ApprovalPolicy.builder().timeout(Duration.ZERO))
        .hasMessageContaining("out of range");
    assertThatThrownBy(() -> ApprovalPolicy.builder().writablePaths(List.of("/a/../etc")))
        .hasMessageContaining("absolute directory without '..'");
  }

  @Test
  void sandboxConfigCarriesThePolicy() {
    ApprovalPolicy p = ApprovalPolicy.builder().fileDeletion(Action.DENY).build();
    SandboxConfig c = SandboxConfig.builder().approvals(p).build();
    assertThat(c.approvals()).isEqualTo(p);
    assertThat(c.toBuilder().build().approvals()).isEqualTo(p);
  }

  @Test
  void allowAndRecordAllowsAndRecords() throws Exception {
    List<ApprovalRequest> seen = new ArrayList<>();
    ApprovalRequest r = new ApprovalRequest("sb", "shell", "rm x", "shell command", Instant.now());
    ApprovalDecision d =
        ApprovalHandler.allowAndRecord(seen::add).decide(r).toCompletableFuture().get();
    assertThat(d.allowed()).isTrue();
    assertThat(seen).containsExactly(r);
  }
}
