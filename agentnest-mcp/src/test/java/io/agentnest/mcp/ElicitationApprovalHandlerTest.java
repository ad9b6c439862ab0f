package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.SandboxConfig;
import io.agentnest.tools.ToolLimits;
import io.modelcontextprotocol.spec.McpSchema.ElicitFormRequest;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;

/** Without a tool call in progress nobody can be asked: the configured handler decides. */
class ElicitationApprovalHandlerTest {
  private static final ApprovalRequest REQUEST =
      new ApprovalRequest(
          "abc", "network", "example.com:443", "CONNECT example.com:443", Instant.now());

  private static McpSandboxSession session() {
    return new McpSandboxSession(
        "s1",
        SandboxConfig.defaults(),
        c -> {
          throw new AssertionError("no sandbox");
        },
        ToolLimits.DEFAULTS,
        1);
  }

  @Test
  void betweenCallsTheFallbackDecides() throws Exception {
    ApprovalHandler fallback =
        r -> CompletableFuture.completedFuture(new ApprovalDecision(true, "policy bot", "bot"));
    ElicitationApprovalHandler h =
        new ElicitationApprovalHandler(session(), fallback, Runnable::run);
    ApprovalDecision d = h.decide(REQUEST).toCompletableFuture().get();
    assertThat(d.allowed()).isTrue();
    assertThat(d.decidedBy()).isEqualTo("bot");
  }

  @Test
  void defaultFallbackDenies() throws Exception {
    ElicitationApprovalHandler h =
        new ElicitationApprovalHandler(session(), ApprovalHandler.denyAll(), Runnable::run);
    assertThat(h.decide(REQUEST).toCompletableFuture().get().allowed()).isFalse();
  }

  @Test
  void endedSessionRefusesNewSandboxesWithAReason() {
    McpSandboxSession s = session();
    s.close();
    Assertions.assertThatThrownBy(() -> s.sandbox(null)).hasMessageContaining("session has ended");
  }

  @Test
  void theQuestionShowsWhatTheSandboxChoseEscaped() {
    String spoof = "evil.example:443\u001b[1A\r\u001b[2Kpypi.org:443\u001b[8m\u202e\u009b\n";
    ElicitFormRequest q =
        ElicitationApprovalHandler.question(
            new ApprovalRequest("abc", "network", spoof, "CONNECT " + spoof, Instant.now()));
    String description =
        String.valueOf(
            ((Map<?, ?>) ((Map<?, ?>) q.requestedSchema().get("properties")).get("approve"))
                .get("description"));
    for (String shown : new String[] {q.message(), description}) {
      assertThat(shown)
          .doesNotContain("\u001b", "\r", "\n", "\u202e", "\u009b")
          .contains("evil.example:443\\x1b[1A\\r\\x1b[2Kpypi.org:443\\x1b[8m\\u202e\\x9b\\n");
    }
  }
}
