package io.agentnest.mcp;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDecision;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolLimits;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sandboxes of one MCP session: a default sandbox, created on first use, and those the client
 * created with {@code create_sandbox}. All of them are destroyed when the session ends. A session
 * can reach only its own sandboxes.
 */
final class McpSandboxSession {
  private static final Logger LOG = LoggerFactory.getLogger(McpSandboxSession.class);

  /** The id clients may use for the default sandbox. */
  static final String DEFAULT = "default";

  private final String sessionId;
  private final SandboxConfig config;
  private final Function<SandboxConfig, Sandbox> factory;
  private final ToolLimits limits;
  private final int maxSandboxes;
  private final AtomicReference<@Nullable McpSyncServerExchange> activeExchange =
      new AtomicReference<>();
  private @Nullable Sandbox defaultSandbox;
  private final Map<String, Sandbox> extra = new LinkedHashMap<>();
  private volatile Instant lastUsed = Instant.now();
  private @Nullable String notice;
  private final ConcurrentHashMap<String, CompletableFuture<ApprovalDecision>> approvals =
      new ConcurrentHashMap<>();
  private boolean closed;

  McpSandboxSession(
      String sessionId,
      SandboxConfig config,
      Function<SandboxConfig, Sandbox> factory,
      ToolLimits limits,
      int maxSandboxes) {
    this.sessionId = sessionId;
    this.config = config;
    this.factory = factory;
    this.limits = limits;
    this.maxSandboxes = maxSandboxes;
  }

  String id() {
    return sessionId;
  }

  SandboxConfig config() {
    return config;
  }

  Instant lastUsed() {
    return lastUsed;
  }

  void touch() {
    lastUsed = Instant.now();
  }

  /** Elicited approval answers by "kind target", for the session's life. */
  ConcurrentHashMap<String, CompletableFuture<ApprovalDecision>> approvals() {
    return approvals;
  }

  /** The exchange of a tool call in progress (for elicitation), or null between calls. */
  @Nullable McpSyncServerExchange activeExchange() {
    return activeExchange.get();
  }

  void enter(McpSyncServerExchange exchange) {
    touch();
    activeExchange.set(exchange);
  }

  void leave(McpSyncServerExchange exchange) {
    touch();
    activeExchange.compareAndSet(exchange, null);
  }

  /** Tools on the sandbox {@code id} (null, blank or "default": the session's default). */
  SandboxTools tools(@Nullable String id) {
    return SandboxTools.of(sandbox(id), limits);
  }

  synchronized Sandbox sandbox(@Nullable String id) {
    if (closed) {
      throw new AgentNestException("this MCP session has ended; reconnect to get a new sandbox");
    }
    if (id == null || id.isBlank() || id.strip().equals(DEFAULT)) {
      Sandbox sb = defaultSandbox;
      if (sb == null || !sb.isAlive()) {
        if (sb != null) {
          sb.destroy();
          notice =
              "[note] the default sandbox had expired or stopped; this call ran in a fresh one:"
                  + " files and variables from earlier calls are gone\n";
        }
        sb = factory.apply(config);
        defaultSandbox = sb;
      }
      return sb;
    }
    String key = id.strip();
    Sandbox sb = extra.get(key);
    if (sb == null && defaultSandbox != null && defaultSandbox.id().equals(key)) {
      sb = defaultSandbox;
    }
    if (sb == null) {
      throw new AgentNestException(
          "no sandbox '"
              + SandboxTools.bound(key, 80)
              + "' in this session; call list_sandboxes for the ids, or leave sandbox_id out for"
              + " the default sandbox");
    }
    return sb;
  }

  /** A note for the model about the session's sandboxes (e.g. a replaced one), once. */
  synchronized @Nullable String takeNotice() {
    String n = notice;
    notice = null;
    return n;
  }

  synchronized Sandbox create() {
    if (closed) {
      throw new AgentNestException("this MCP session has ended; reconnect to get a new sandbox");
    }
    if (count() >= maxSandboxes) {
      throw new AgentNestException(
          "this session already has "
              + count()
              + " sandboxes, the maximum; destroy one with destroy_sandbox first");
    }
    Sandbox sb = factory.apply(config);
    extra.put(sb.id(), sb);
    return sb;
  }

  /** Forks sandbox {@code id} (or the default) and adds the copy to this session. */
  Sandbox fork(@Nullable String id) {
    Sandbox parent;
    synchronized (this) {
      if (count() >= maxSandboxes) {
        throw new AgentNestException(
            "this session already has "
                + count()
                + " sandboxes, the maximum; destroy one with destroy_sandbox first");
      }
      parent = sandbox(id);
    }
    // Outside the lock: a fork copies files and session state and may take a while.
    Sandbox copy = parent.fork();
    synchronized (this) {
      if (closed) {
        copy.destroy();
        throw new AgentNestException("this MCP session has ended; reconnect to get a new sandbox");
      }
      extra.put(copy.id(), copy);
    }
    return copy;
  }

  synchronized boolean destroy(String id) {
    String key = id.strip();
    if (key.equals(DEFAULT) || (defaultSandbox != null && defaultSandbox.id().equals(key))) {
      Sandbox sb = defaultSandbox;
      defaultSandbox = null;
      if (sb != null) {
        sb.destroy();
        return true;
      }
      return false;
    }
    Sandbox sb = extra.remove(key);
    if (sb == null) {
      return false;
    }
    sb.destroy();
    return true;
  }

  private int count() {
    return extra.size() + (defaultSandbox != null ? 1 : 0);
  }

  /** (label, sandbox) of every live sandbox, default first. */
  synchronized List<Map.Entry<String, Sandbox>> sandboxes() {
    List<Map.Entry<String, Sandbox>> out = new ArrayList<>();
    if (defaultSandbox != null) {
      out.add(Map.entry(DEFAULT, defaultSandbox));
    }
    for (Sandbox sb : extra.values()) {
      out.add(Map.entry("created", sb));
    }
    return out;
  }

  /** Destroys every sandbox of the session; idempotent. */
  void close() {
    List<Sandbox> all = new ArrayList<>();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      if (defaultSandbox != null) {
        all.add(defaultSandbox);
        defaultSandbox = null;
      }
      all.addAll(extra.values());
      extra.clear();
    }
    for (Sandbox sb : all) {
      try {
        sb.destroy();
      } catch (RuntimeException e) {
        LOG.warn(
            "could not destroy sandbox {} of MCP session {}: {}", sb.id(), sessionId, e.toString());
      }
    }
  }
}
