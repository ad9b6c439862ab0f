package io.agentnest.internal.call;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.internal.support.Json;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ExecFinishedAuditTest {
  private static ExecResult result(int exit, Limit limit, boolean truncated, Duration took) {
    return new ExecResult(
        exit, "", "", null, List.of(), null, took, limit, truncated, false, Map.of());
  }

  @Test
  void valuesTheAgentReportedAreMarkedAsSandboxReportedNextToTheHostsOwnTime() {
    // A sandbox that claims a 1 ms run and a timeout: both are its word, not the host's.
    var res = Json.object().put("exit_code", 0).put("duration_ms", 1).put("limit", "timeout");
    ExecResult r = result(0, Limit.TIMEOUT, false, Duration.ofMillis(1));

    Map<String, Object> d = ExecFinishedAudit.finished(7, r, res, Duration.ofMillis(1234));

    assertThat(d)
        .containsEntry("call", 7L)
        .containsEntry("exit", 0)
        .containsEntry("duration_ms", 1L)
        .containsEntry("host_ms", 1234L)
        .containsEntry("limit", "TIMEOUT");
    assertThat(d.get("sandbox_reported"))
        .asList()
        .containsExactly("exit", "duration_ms", "limit", "state_lost");
    assertThat(ExecFinishedAudit.limitHit(7, r, res)).containsEntry("reported_by", "sandbox");
  }

  @Test
  void theHostsOwnOutputCapIsNotSandboxReported() {
    // No limit in the agent's result: the host cut the output itself.
    var res = Json.object().put("exit_code", 0).put("duration_ms", 5);
    ExecResult r = result(0, Limit.OUTPUT, true, Duration.ofMillis(5));

    Map<String, Object> d = ExecFinishedAudit.finished(3, r, res, Duration.ofMillis(6));

    assertThat(d).containsEntry("limit", "OUTPUT").containsEntry("truncated", true);
    assertThat(d.get("sandbox_reported")).asList().doesNotContain("limit", "truncated");
    assertThat(ExecFinishedAudit.limitHit(3, r, res)).containsEntry("reported_by", "host");
  }
}
