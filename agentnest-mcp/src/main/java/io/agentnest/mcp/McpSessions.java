package io.agentnest.mcp;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalHandler;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.tools.ToolLimits;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** MCP session id -> that session's sandboxes; ends sessions that close or go idle. */
final class McpSessions {
  private static final Logger LOG = LoggerFactory.getLogger(McpSessions.class);

  private final SandboxConfig base;
  private final ApprovalHandler fallback;
  private final Function<SandboxConfig, Sandbox> factory;
  private final ToolLimits limits;
  private final int maxSandboxes;
  private final Executor approvals;
  private final boolean sessionLabel;
  private final Map<String, McpSandboxSession> sessions = new ConcurrentHashMap<>();
  private volatile boolean closed;

  McpSessions(
      SandboxConfig base,
      Function<SandboxConfig, Sandbox> factory,
      ToolLimits limits,
      int maxSandboxes,
      Executor approvals,
      boolean sessionLabel) {
    this.base = base;
    this.sessionLabel = sessionLabel;
    ApprovalHandler configured = base.approvalHandler();
    this.fallback = configured != null ? configured : ApprovalHandler.denyAll();
    this.factory = factory;
    this.limits = limits;
    this.maxSandboxes = maxSandboxes;
    this.approvals = approvals;
  }

  McpSandboxSession forExchange(McpSyncServerExchange exchange) {
    String id = exchange.sessionId();
    return get(id == null ? "stdio" : id);
  }

  McpSandboxSession get(String sessionId) {
    if (closed) {
      throw new AgentNestException("the MCP server is shutting down");
    }
    return sessions.computeIfAbsent(sessionId, this::open);
  }

  private McpSandboxSession open(String sessionId) {
    McpSandboxSession[] holder = new McpSandboxSession[1];
    ApprovalHandler perSession =
        request -> {
          McpSandboxSession s = holder[0];
          return new ElicitationApprovalHandler(s, fallback, approvals).decide(request);
        };
    SandboxConfig.Builder b = base.toBuilder();
    boolean remote = base.remote() != null || base.backend().equals("remote");
    b.approvalHandler(remote ? null : perSession);
    // On an agentnest serve server the questions wait in its approvals queue (GET /v1/approvals,
    // the web console) instead: this process holds no policy over a remote sandbox.
    if (sessionLabel) {
      b.label("mcp-session", labelOf(sessionId));
    }
    SandboxConfig config = b.build();
    McpSandboxSession s = new McpSandboxSession(sessionId, config, factory, limits, maxSandboxes);
    holder[0] = s;
    return s;
  }

  private static String labelOf(String sessionId) {
    String clean = sessionId.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9._-]", "");
    if (clean.isEmpty()) {
      clean = "session";
    }
    return clean.length() > 63 ? clean.substring(0, 63) : clean;
  }

  /** Ends a session: destroys its sandboxes. */
  void end(@Nullable String sessionId) {
    if (sessionId == null) {
      return;
    }
    McpSandboxSession s = sessions.remove(sessionId);
    if (s != null) {
      LOG.info("MCP session {} ended; destroying its sandboxes", sessionId);
      s.close();
    }
  }

  /** Ends sessions without a call for longer than {@code idle}. */
  void reapIdle(Duration idle) {
    Instant cutoff = Instant.now().minus(idle);
    for (McpSandboxSession s : new ArrayList<>(sessions.values())) {
      if (s.lastUsed().isBefore(cutoff) && s.activeExchange() == null) {
        LOG.info("MCP session {} idle since {}; destroying its sandboxes", s.id(), s.lastUsed());
        sessions.remove(s.id(), s);
        s.close();
      }
    }
  }

  int size() {
    return sessions.size();
  }

  /** Ends every session. */
  void closeAll() {
    closed = true;
    List<McpSandboxSession> all = new ArrayList<>(sessions.values());
    sessions.clear();
    for (McpSandboxSession s : all) {
      s.close();
    }
  }
}
