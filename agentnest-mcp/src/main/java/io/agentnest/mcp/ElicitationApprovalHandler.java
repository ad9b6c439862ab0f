package io.agentnest.mcp;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.text.HumanText;
import io.agentnest.tools.SandboxTools;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.jspecify.annotations.Nullable;

/**
 * Asks the MCP client's user to approve an operation (e.g. a connection to a host that is not on
 * the allowlist, with {@code on_unknown_host: ask}) through MCP elicitation. When no tool call is
 * in progress, or the client did not declare the elicitation capability, the configured fallback
 * decides (deny-all unless the configuration set another handler). The policy's approval timeout
 * still applies: an unanswered question denies.
 */
final class ElicitationApprovalHandler implements ApprovalHandler {
  /** decidedBy of a denial because nobody could be asked (not remembered). */
  static final String NOT_ASKED = "mcp-elicitation-unavailable";

  private final McpSandboxSession session;
  private final ApprovalHandler fallback;
  private final Executor executor;

  ElicitationApprovalHandler(
      McpSandboxSession session, ApprovalHandler fallback, Executor executor) {
    this.session = session;
    this.fallback = fallback;
    this.executor = executor;
  }

  static boolean supportsElicitation(McpSyncServerExchange exchange) {
    McpSchema.ClientCapabilities caps = exchange.getClientCapabilities();
    return caps != null && caps.elicitation() != null;
  }

  @Override
  public CompletionStage<ApprovalDecision> decide(ApprovalRequest request) {
    McpSyncServerExchange exchange = session.activeExchange();
    if (exchange == null || !supportsElicitation(exchange)) {
      return fallback.decide(request);
    }
    // One question per target and session: parallel connections (pip, git) share it, and the
    // user's answer holds for the rest of the session. Failures to ask are not remembered.
    String key = request.kind() + " " + request.target();
    CompletableFuture<ApprovalDecision> answer =
        session
            .approvals()
            .computeIfAbsent(
                key,
                k -> {
                  try {
                    return CompletableFuture.supplyAsync(() -> ask(exchange, request), executor);
                  } catch (RejectedExecutionException e) {
                    return CompletableFuture.completedFuture(
                        new ApprovalDecision(
                            false,
                            "too many approval questions are pending; try again later",
                            NOT_ASKED));
                  }
                });
    return answer.whenComplete(
        (d, e) -> {
          if (e != null || d == null || NOT_ASKED.equals(d.decidedBy())) {
            session.approvals().remove(key, answer);
          }
        });
  }

  /** The question a person sees in the MCP client. */
  static McpSchema.ElicitFormRequest question(ApprovalRequest request) {
    // The client shows these to a person: what the sandbox chose is escaped, never acted on.
    String kind = HumanText.line(request.kind(), 40);
    String target = HumanText.line(request.target(), 300);
    String detail = HumanText.line(request.detail(), 500);
    String message =
        "AgentNest sandbox "
            + HumanText.line(shortId(request.sandboxId()))
            + " asks for "
            + kind
            + " access to "
            + target
            + " ("
            + detail
            + "), which the policy does not allow by itself. Allow it? The answer holds for this"
            + " host for the rest of the session.";
    Map<String, Object> approve = new LinkedHashMap<>();
    approve.put("type", "boolean");
    approve.put("title", "Allow");
    approve.put("description", "Allow " + kind + " access to " + target);
    Map<String, Object> schema = new LinkedHashMap<>();
    schema.put("type", "object");
    schema.put("properties", Map.of("approve", approve));
    schema.put("required", List.of("approve"));
    return McpSchema.ElicitRequest.builder().message(message).requestedSchema(schema).build();
  }

  private static ApprovalDecision ask(McpSyncServerExchange exchange, ApprovalRequest request) {
    McpSchema.ElicitResult result;
    try {
      result = exchange.createElicitation(question(request));
    } catch (RuntimeException e) {
      return new ApprovalDecision(
          false,
          "the MCP client could not be asked: " + SandboxTools.bound(e.getMessage(), 300),
          NOT_ASKED);
    }
    String who = "mcp-elicitation:" + clientName(exchange);
    if (result == null || result.action() != McpSchema.ElicitResult.Action.ACCEPT) {
      String why =
          result == null
              ? "the client gave no answer"
              : result.action() == McpSchema.ElicitResult.Action.DECLINE
                  ? "the user declined"
                  : "the user cancelled the question";
      return new ApprovalDecision(false, why, who);
    }
    Map<String, Object> content = result.content();
    Object answer = content == null ? null : content.get("approve");
    boolean allowed = Boolean.TRUE.equals(answer) || "true".equals(String.valueOf(answer));
    return new ApprovalDecision(
        allowed, allowed ? "approved by the user" : "denied by the user", who);
  }

  private static String shortId(String id) {
    return id.length() > 12 ? id.substring(0, 12) : id;
  }

  private static String clientName(McpSyncServerExchange exchange) {
    McpSchema.@Nullable Implementation info = exchange.getClientInfo();
    return info == null ? "client" : HumanText.line(SandboxTools.bound(info.name(), 60));
  }
}
