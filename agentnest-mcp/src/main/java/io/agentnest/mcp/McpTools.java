package io.agentnest.mcp;

import static io.agentnest.mcp.McpArguments.args;
import static io.agentnest.mcp.McpArguments.bool;
import static io.agentnest.mcp.McpArguments.optString;
import static io.agentnest.mcp.McpArguments.string;
import static io.agentnest.mcp.McpArguments.timeout;

import io.agentnest.AgentNestException;
import io.agentnest.ExecEvent;
import io.agentnest.Sandbox;
import io.agentnest.mcp.McpArguments.ArgumentException;
import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolOutput;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The MCP tools: schemas written for a model, and handlers that answer with tool results. */
final class McpTools {
  private static final Logger LOG = LoggerFactory.getLogger(McpTools.class);
  private static final String SANDBOX_ID_DESCRIPTION =
      "Which sandbox to use: an id from create_sandbox/list_sandboxes. Leave it out to use this"
          + " session's default sandbox (created on first use).";

  /** At most this many progress notifications per second for output. */
  private static final long PROGRESS_INTERVAL_MS = 250;

  private static final long HEARTBEAT_SECONDS = 5;

  private final McpSessions sessions;
  private final ScheduledExecutorService timer;
  private final McpBrowserTools browserTools = new McpBrowserTools();
  private final McpGitTools gitTools = new McpGitTools(System.getenv());

  McpTools(McpSessions sessions, ScheduledExecutorService timer) {
    this.sessions = sessions;
    this.timer = timer;
  }

  List<SyncToolSpecification> all() {
    List<SyncToolSpecification> tools = new ArrayList<>();
    tools.add(
        tool(
            "run_python",
            "Run Python",
            SandboxTools.RUN_PYTHON_DESCRIPTION
                + " Long runs report progress. Errors (exceptions, time limit) come back as a"
                + " tool error with the traceback.",
            schema(
                List.of("code"),
                prop(
                    "code", "string", "Python source to run, e.g. \"import math\\nmath.sqrt(2)\"."),
                prop(
                    "session",
                    "string",
                    "Name of an independent interpreter; leave it out for the default session."
                        + " Variables are kept per session."),
                timeoutProp(),
                sandboxIdProp()),
            annotations(false, false, false),
            streaming(
                (sandbox, a, events) ->
                    sandbox.runPython(
                        string(a, "code"), optString(a, "session"), timeout(a), events))));
    tools.add(
        tool(
            "run_shell",
            "Run shell command",
            SandboxTools.RUN_SHELL_DESCRIPTION
                + " Long runs report progress. A non-zero exit code comes back as a tool error.",
            schema(
                List.of("command"),
                prop("command", "string", "Shell command line, e.g. \"ls -la && wc -l *.csv\"."),
                prop(
                    "workdir",
                    "string",
                    "Directory relative to /workspace to run in (e.g. \"project\"); leave it out for"
                        + " /workspace. Paths outside /workspace are refused."),
                timeoutProp(),
                sandboxIdProp()),
            annotations(false, false, false),
            streaming(
                (sandbox, a, events) ->
                    sandbox.runShell(
                        string(a, "command"), optString(a, "workdir"), timeout(a), events))));
    Map<String, Object> encoding = prop("encoding", "string", "How 'content' is encoded.");
    encoding.put("enum", List.of("utf-8", "base64"));
    encoding.put("default", "utf-8");
    tools.add(
        tool(
            "write_file",
            "Write file",
            SandboxTools.WRITE_FILE_DESCRIPTION,
            schema(
                List.of("path", "content"),
                prop("path", "string", "Path relative to /workspace, e.g. \"data/input.csv\"."),
                prop(
                    "content",
                    "string",
                    "The file's content: text, or base64 when encoding is \"base64\"."),
                encoding,
                sandboxIdProp()),
            annotations(false, true, true),
            (ex, req) ->
                simple(
                    ex,
                    a -> {
                      String enc = optString(a, "encoding");
                      boolean base64 = enc != null && enc.strip().equalsIgnoreCase("base64");
                      if (enc != null && !base64 && !enc.strip().equalsIgnoreCase("utf-8")) {
                        return ToolOutputs.error(
                            "error: encoding must be \"utf-8\" or \"base64\", not \""
                                + SandboxTools.bound(enc, 40)
                                + "\"");
                      }
                      return tools(ex, a)
                          .writeFile(string(a, "path"), string(a, "content"), base64);
                    },
                    req)));
    tools.add(
        tool(
            "read_file",
            "Read file",
            SandboxTools.READ_FILE_DESCRIPTION,
            schema(
                List.of("path"),
                prop(
                    "path", "string", "Path relative to /workspace, e.g. \"results/summary.txt\"."),
                sandboxIdProp()),
            annotations(true, false, true),
            (ex, req) -> simple(ex, a -> tools(ex, a).readFile(string(a, "path")), req)));
    Map<String, Object> listPath =
        prop("path", "string", "Directory relative to /workspace; \"\" (default) is the root.");
    listPath.put("default", "");
    Map<String, Object> recursive =
        prop("recursive", "boolean", "List everything below the directory, not just its entries.");
    recursive.put("default", false);
    tools.add(
        tool(
            "list_files",
            "List files",
            SandboxTools.LIST_FILES_DESCRIPTION,
            schema(List.of(), listPath, recursive, sandboxIdProp()),
            annotations(true, false, true),
            (ex, req) ->
                simple(
                    ex,
                    a -> tools(ex, a).listFiles(optString(a, "path"), bool(a, "recursive")),
                    req)));
    tools.add(
        tool(
            "export_artifact",
            "Export artifact",
            SandboxTools.EXPORT_ARTIFACT_DESCRIPTION,
            schema(
                List.of("path"),
                prop("path", "string", "File relative to /workspace, e.g. \"plots/fig1.png\"."),
                sandboxIdProp()),
            annotations(true, false, true),
            (ex, req) ->
                simple(
                    ex,
                    a -> {
                      String id = optString(a, "sandbox_id");
                      McpSandboxSession s = session(ex);
                      ToolOutput out = s.tools(id).exportArtifact(string(a, "path"));
                      return new ToolOutputs.Located(out, s.sandbox(id).id());
                    },
                    req)));
    tools.add(
        tool(
            "create_sandbox",
            "Create sandbox",
            "Create another isolated sandbox in this session (same policy and limits as the"
                + " default one; its own files and Python sessions). Returns its sandbox_id for the"
                + " other tools. Sandboxes are destroyed when the session ends.",
            schema(List.of()),
            annotations(false, false, false),
            (ex, req) ->
                simple(
                    ex,
                    a -> {
                      Sandbox sb = session(ex).create();
                      return ToolOutputs.ok(
                          "created sandbox "
                              + sb.id()
                              + " (pass sandbox_id \""
                              + sb.id()
                              + "\" to the other tools; expires "
                              + sb.expiresAt()
                              + ")");
                    },
                    req)));
    tools.add(
        tool(
            "list_sandboxes",
            "List sandboxes",
            "List this session's sandboxes: sandbox_id, whether it is the default, when it"
                + " expires.",
            schema(List.of()),
            annotations(true, false, true),
            (ex, req) ->
                simple(
                    ex,
                    a -> {
                      StringBuilder out = new StringBuilder();
                      for (Map.Entry<String, Sandbox> e : session(ex).sandboxes()) {
                        out.append(e.getValue().id())
                            .append('\t')
                            .append(e.getKey())
                            .append("\texpires ")
                            .append(e.getValue().expiresAt())
                            .append('\n');
                      }
                      return ToolOutputs.ok(
                          out.length() == 0
                              ? "no sandboxes yet: the default sandbox starts with the first"
                                  + " run_python, run_shell or file call"
                              : out.toString());
                    },
                    req)));
    tools.add(
        tool(
            "destroy_sandbox",
            "Destroy sandbox",
            "Destroy a sandbox of this session and everything in it (files, Python sessions)."
                + " Destroying \"default\" resets the default sandbox: the next call gets a fresh"
                + " one.",
            schema(
                List.of("sandbox_id"),
                prop("sandbox_id", "string", "The sandbox to destroy, or \"default\".")),
            annotations(false, true, true),
            (ex, req) ->
                simple(
                    ex,
                    a -> {
                      String id = string(a, "sandbox_id");
                      return session(ex).destroy(id)
                          ? ToolOutputs.ok("destroyed sandbox " + SandboxTools.bound(id, 80))
                          : ToolOutputs.error(
                              "error: no sandbox '"
                                  + SandboxTools.bound(id, 80)
                                  + "' in this session; call list_sandboxes for the ids");
                    },
                    req)));
    tools.add(
        tool(
            "fork_sandbox",
            "Fork sandbox",
            "Make an independent copy of a sandbox: its files and the variables, imports,"
                + " functions and classes of its Python sessions. Use it to try something risky or"
                + " to explore alternatives from the same state; later changes in one are never"
                + " seen in the other. Returns the copy's sandbox_id and what could not be copied"
                + " (e.g. open files or generators, on runc). Counts toward the session's sandbox"
                + " limit.",
            schema(List.of(), sandboxIdProp()),
            annotations(false, false, false),
            (ex, req) ->
                simple(
                    ex,
                    a -> {
                      Sandbox copy = session(ex).fork(optString(a, "sandbox_id"));
                      StringBuilder out =
                          new StringBuilder("forked into sandbox ")
                              .append(copy.id())
                              .append(" (pass sandbox_id \"")
                              .append(copy.id())
                              .append("\" to the other tools)");
                      copy.forkReport()
                          .ifPresent(
                              r -> {
                                out.append("; state carried by ").append(r.mode());
                                if (!r.skipped().isEmpty()) {
                                  out.append("; not carried: ");
                                  r.skipped()
                                      .forEach(
                                          sk ->
                                              out.append(SandboxTools.bound(sk.toString(), 120))
                                                  .append(' '));
                                }
                              });
                      return ToolOutputs.ok(out.toString().strip());
                    },
                    req)));
    tools.addAll(browserTools.all(this));
    tools.addAll(gitTools.all(this));
    // Extra tools can also be added without editing this class:
    // AgentNestMcpServer.Builder.extraTool(...).
    return tools;
  }

  McpSandboxSession session(McpSyncServerExchange exchange) {
    return sessions.forExchange(exchange);
  }

  /** The tools of the sandbox a call's {@code sandbox_id} names (the default one without it). */
  private SandboxTools tools(McpSyncServerExchange exchange, Map<String, Object> args) {
    return session(exchange).tools(optString(args, "sandbox_id"));
  }

  /** Work that streams: it gets the call's sandbox tools, arguments, and a progress sink. */
  @FunctionalInterface
  private interface StreamingWork {
    ToolOutput run(
        SandboxTools tools, Map<String, Object> args, @Nullable Consumer<ExecEvent> events);
  }

  /** A tool whose work streams: progress notifications while it runs, then the result. */
  private BiFunction<McpSyncServerExchange, CallToolRequest, CallToolResult> streaming(
      StreamingWork work) {
    return (exchange, request) -> streaming(exchange, request, work);
  }

  private CallToolResult streaming(
      McpSyncServerExchange exchange, CallToolRequest request, StreamingWork work) {
    Object token = request.progressToken();
    Progress progress = token == null ? null : new Progress(exchange, token);
    return inSession(
        exchange,
        session -> {
          ScheduledFuture<?> heartbeat =
              progress == null
                  ? null
                  : timer.scheduleAtFixedRate(
                      progress::heartbeat, HEARTBEAT_SECONDS, HEARTBEAT_SECONDS, TimeUnit.SECONDS);
          try {
            Map<String, Object> a = args(request);
            ToolOutput out =
                work.run(tools(exchange, a), a, progress == null ? null : progress::event);
            return ToolOutputs.toResult(withNotice(session, out), null);
          } finally {
            if (heartbeat != null) {
              heartbeat.cancel(false);
            }
          }
        });
  }

  /** A tool that answers at once: a {@link ToolOutput}, or one located in a sandbox. */
  CallToolResult simple(
      McpSyncServerExchange exchange,
      Function<Map<String, Object>, Object> work,
      CallToolRequest request) {
    return inSession(
        exchange,
        session -> {
          Object out = work.apply(args(request));
          if (out instanceof ToolOutputs.Located l) {
            return ToolOutputs.toResult(withNotice(session, l.output()), l.sandboxId());
          }
          return ToolOutputs.toResult(withNotice(session, (ToolOutput) out), null);
        });
  }

  /**
   * Runs a call inside its session (which counts it as active), answering bad arguments and
   * AgentNest failures as tool errors.
   */
  private CallToolResult inSession(
      McpSyncServerExchange exchange, Function<McpSandboxSession, CallToolResult> call) {
    McpSandboxSession session = session(exchange);
    session.enter(exchange);
    try {
      return call.apply(session);
    } catch (ArgumentException e) {
      return ToolOutputs.toResult(ToolOutputs.error("error: " + e.getMessage()), null);
    } catch (AgentNestException e) {
      return ToolOutputs.toResult(
          ToolOutputs.error("error: " + SandboxTools.bound(e.getMessage(), 2000)), null);
    } finally {
      session.leave(exchange);
    }
  }

  private static ToolOutput withNotice(McpSandboxSession session, ToolOutput out) {
    String notice = session.takeNotice();
    return notice == null
        ? out
        : new ToolOutput(notice + out.text(), out.attachments(), out.isError());
  }

  /** Progress notifications of one call: output as it comes (throttled), and a heartbeat. */
  private static final class Progress {
    private final McpSyncServerExchange exchange;
    private final Object token;
    private final long started = System.nanoTime();
    private long count;
    private long lastSent;
    private long bytes;

    Progress(McpSyncServerExchange exchange, Object token) {
      this.exchange = exchange;
      this.token = token;
    }

    synchronized void event(ExecEvent e) {
      String message;
      if (e instanceof ExecEvent.Output o) {
        bytes += o.chunk().data().length;
        String text = o.chunk().text().strip();
        int nl = text.lastIndexOf('\n');
        message = SandboxTools.bound(nl >= 0 ? text.substring(nl + 1) : text, 200);
      } else if (e instanceof ExecEvent.Truncated) {
        message = "output cap reached";
      } else {
        return;
      }
      long now = System.nanoTime();
      if (now - lastSent < PROGRESS_INTERVAL_MS * 1_000_000L) {
        return;
      }
      send(now, message);
    }

    synchronized void heartbeat() {
      long now = System.nanoTime();
      if (now - lastSent < HEARTBEAT_SECONDS * 1_000_000_000L / 2) {
        return;
      }
      send(
          now,
          "running for " + (now - started) / 1_000_000_000L + " s, " + bytes + " bytes of output");
    }

    private void send(long now, String message) {
      lastSent = now;
      count++;
      try {
        exchange.progressNotification(
            new McpSchema.ProgressNotification(token, (double) count, null, message));
      } catch (RuntimeException e) {
        LOG.debug("progress notification failed: {}", e.toString());
      }
    }
  }

  // ---- schema helpers

  static SyncToolSpecification tool(
      String name,
      String title,
      String description,
      Map<String, Object> inputSchema,
      McpSchema.ToolAnnotations annotations,
      BiFunction<McpSyncServerExchange, CallToolRequest, CallToolResult> handler) {
    McpSchema.Tool tool =
        McpSchema.Tool.builder()
            .name(name)
            .title(title)
            .description(description)
            .inputSchema(inputSchema)
            .annotations(annotations)
            .build();
    return SyncToolSpecification.builder()
        .tool(tool)
        .callHandler(
            (ex, req) -> {
              try {
                return handler.apply(ex, req);
              } catch (RuntimeException e) {
                LOG.warn("tool {} failed", name, e);
                return ToolOutputs.toResult(
                    ToolOutputs.error(
                        "error: "
                            + name
                            + " failed unexpectedly ("
                            + SandboxTools.bound(e.toString(), 500)
                            + "); the server log has details"),
                    null);
              }
            })
        .build();
  }

  static McpSchema.ToolAnnotations annotations(
      boolean readOnly, boolean destructive, boolean idempotent) {
    return new McpSchema.ToolAnnotations(null, readOnly, destructive, idempotent, false, null);
  }

  @SafeVarargs
  static Map<String, Object> schema(List<String> required, Map<String, Object>... props) {
    Map<String, Object> properties = new LinkedHashMap<>();
    for (Map<String, Object> p : props) {
      Map<String, Object> copy = new LinkedHashMap<>(p);
      String name = (String) copy.remove("$name");
      properties.put(name, copy);
    }
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("type", "object");
    s.put("properties", properties);
    if (!required.isEmpty()) {
      s.put("required", required);
    }
    s.put("additionalProperties", false);
    return s;
  }

  static Map<String, Object> prop(String name, String type, String description) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("$name", name);
    p.put("type", type);
    p.put("description", description);
    return p;
  }

  static Map<String, Object> sandboxIdProp() {
    return prop("sandbox_id", "string", SANDBOX_ID_DESCRIPTION);
  }

  private static Map<String, Object> timeoutProp() {
    Map<String, Object> p =
        prop(
            "timeout_seconds",
            "number",
            "Wall-time limit for this call in seconds; at most the server's limit (the default).");
    p.put("exclusiveMinimum", 0);
    return p;
  }
}
