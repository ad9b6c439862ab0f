package io.agentnest.internal.call;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ExecResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The audit data of a finished call. The agent runs as the same uid as the code it runs, so what it
 * reports (exit status, its own timing, which limit stopped the call) is what the sandbox says, not
 * what the host saw: each such field is named in {@code sandbox_reported}, next to the host's own
 * measurement of the call's wall time ({@code host_ms}).
 */
public final class ExecFinishedAudit {
  /** Who stands behind a value in the audit. */
  enum Source {
    SANDBOX,
    HOST;

    String label() {
      return this == SANDBOX ? "sandbox" : "host";
    }
  }

  private ExecFinishedAudit() {}

  /**
   * {@code exec.finished} data for {@code r}, built from the agent's final frame {@code res} and
   * the host's own clock ({@code hostTime}).
   */
  public static Map<String, Object> finished(
      long callId, ExecResult r, JsonNode res, Duration hostTime) {
    Map<String, Object> d = new LinkedHashMap<>();
    List<String> reported = new ArrayList<>();
    d.put("call", callId);
    d.put("exit", r.exitCode());
    reported.add("exit");
    d.put("duration_ms", r.duration().toMillis());
    reported.add("duration_ms");
    d.put("host_ms", hostTime.toMillis());
    if (r.error() != null) {
      d.put("error", r.error().name());
      reported.add("error");
    }
    if (r.limit() != null) {
      d.put("limit", r.limit().name());
      if (limitSource(res) == Source.SANDBOX) {
        reported.add("limit");
      }
    }
    d.put("truncated", r.truncated());
    if (res.path("truncated").asBoolean(false)) {
      reported.add("truncated");
    }
    d.put("state_lost", r.stateLost());
    reported.add("state_lost");
    d.put("sandbox_reported", reported);
    return d;
  }

  /** {@code limit.hit} data: the limit and who reported it. */
  public static Map<String, Object> limitHit(long callId, ExecResult r, JsonNode res) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("call", callId);
    d.put("limit", String.valueOf(r.limit()));
    d.put("reported_by", limitSource(res).label());
    return d;
  }

  /** A limit named in the agent's result is its claim; otherwise the host found it (output cap). */
  static Source limitSource(JsonNode res) {
    return res.path("limit").asText("").isEmpty() ? Source.HOST : Source.SANDBOX;
  }
}
