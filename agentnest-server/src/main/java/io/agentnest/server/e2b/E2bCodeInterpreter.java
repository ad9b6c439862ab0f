package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecError;
import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.OutputChunk;
import io.agentnest.RichOutput;
import io.agentnest.Sandbox;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.ExecutionTaps;
import io.agentnest.server.service.Registry;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The code interpreter's API ({@code @e2b/code-interpreter}, port 49999): {@code POST /execute}
 * streams a Python call as JSON lines ({@code stdout}, {@code stderr}, {@code result}, {@code
 * error}, then {@code end_of_execution}), and code contexts are AgentNest Python sessions, so
 * variables persist per context as they do per session. Only Python is served; anything else is
 * refused with the reason.
 */
public final class E2bCodeInterpreter {
  /** Code contexts (Python sessions) one sandbox may hold, shared with /v1's session bound. */
  static final int MAX_CONTEXTS = 16;

  /** A code context: its E2B id, the AgentNest session behind it, and its working directory. */
  record CodeContext(String id, String session, String cwd) {}

  private final Clock clock;
  private final ExecutionTaps taps;

  public E2bCodeInterpreter(Clock clock, ExecutionTaps taps) {
    this.clock = clock;
    this.taps = taps;
  }

  /** Runs {@code POST /execute}. */
  void execute(Context ctx, Registry.Entry e, E2bSandboxes.State s, byte[] body) {
    ObjectNode req = object(body);
    String code = req.path("code").isTextual() ? req.get("code").asText() : null;
    if (code == null) {
      throw new E2bErrors.HttpError(400, "the body has no 'code': send {\"code\": \"print(1)\"}");
    }
    language(req.path("language").isTextual() ? req.get("language").asText() : null);
    if (req.path("env_vars").isObject() && req.get("env_vars").size() > 0) {
      throw new E2bErrors.HttpError(
          400,
          "env_vars on runCode are not served: a Python context's environment is fixed when the"
              + " sandbox starts; pass envs to Sandbox.create, or set os.environ in the code");
    }
    Sandbox sb = e.sandbox();
    String contextId = req.path("context_id").isTextual() ? req.get("context_id").asText() : null;
    CodeContext c = null;
    if (contextId != null && !contextId.isEmpty()) {
      c = s.contexts.get(contextId);
      if (c == null) {
        throw new E2bErrors.HttpError(
            404,
            "context '" + Escape.id(contextId) + "' not found: create it with createCodeContext");
      }
    }
    // The console's live view shows the interpreter's calls as it shows commands.
    ExecutionTaps.Run run = taps.start(sb.id(), "e2b-code", code);
    ExecOptions options = ExecOptions.builder().onOutput(run::output).build();
    Execution ex;
    try {
      ex =
          c != null
              ? sb.pythonSession(c.session()).start(code, options)
              : sb.startCode(code, options);
    } catch (RuntimeException refused) {
      run.finish(null, refused);
      throw refused;
    }
    ex.result().whenComplete(run::finish);
    stream(ctx, ex);
  }

  private void stream(Context ctx, Execution ex) {
    ctx.status(200);
    ctx.contentType("application/x-ndjson");
    ctx.header("Cache-Control", "no-store");
    try {
      OutputStream out = ctx.res().getOutputStream();
      Lines stdout = new Lines("stdout");
      Lines stderr = new Lines("stderr");
      for (ExecEvent ev : ex) {
        if (ev instanceof ExecEvent.Output o) {
          Lines l = o.chunk().stream() == OutputChunk.Stream.STDOUT ? stdout : stderr;
          for (String text : l.feed(o.chunk().text(), false)) {
            line(out, output(l.type, text));
          }
        } else if (ev instanceof ExecEvent.Finished f) {
          for (Lines l : List.of(stdout, stderr)) {
            for (String text : l.feed("", true)) {
              line(out, output(l.type, text));
            }
          }
          finish(out, f.result());
        }
      }
    } catch (IOException | RuntimeException gone) {
      // The client went away: stop the call so the interpreter is free for the next one.
      ex.cancel();
    }
  }

  private Map<String, Object> output(String type, String text) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("type", type);
    m.put("text", text);
    m.put("timestamp", clock.millis() * 1000);
    return m;
  }

  /**
   * Regroups one stream's chunks into lines, as Jupyter delivers them (the SDK hands each message
   * to onStdout as a line); a line longer than {@link #MAX_LINE} goes out in pieces.
   */
  static final class Lines {
    static final int MAX_LINE = 64 * 1024;
    final String type;
    private final StringBuilder pending = new StringBuilder();

    Lines(String type) {
      this.type = type;
    }

    List<String> feed(String text, boolean end) {
      pending.append(text);
      List<String> out = new ArrayList<>();
      int nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        out.add(pending.substring(0, nl + 1));
        pending.delete(0, nl + 1);
      }
      if ((end || pending.length() >= MAX_LINE) && pending.length() > 0) {
        out.add(pending.toString());
        pending.setLength(0);
      }
      return out;
    }
  }

  private static void finish(OutputStream out, ExecResult r) throws IOException {
    if (r.result() != null || !r.rich().isEmpty()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("type", "result");
      if (r.result() != null) {
        m.put("text", r.result());
      }
      for (RichOutput o : r.rich()) {
        String field = field(o.mimeType());
        if (field != null && !m.containsKey(field)) {
          m.put(
              field, binary(o.mimeType()) ? Base64.getEncoder().encodeToString(o.data()) : text(o));
        }
      }
      m.put("is_main_result", true);
      line(out, m);
    }
    ExecError err = r.error();
    if (err != null) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("type", "error");
      m.put("name", err.name());
      m.put("value", err.value());
      m.put("traceback", err.traceback());
      line(out, m);
    } else if (r.limit() != null) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("type", "error");
      m.put("name", "AgentNestLimit");
      m.put("value", "stopped by AgentNest: limit " + r.limit().name().toLowerCase(Locale.ROOT));
      m.put("traceback", "");
      line(out, m);
    }
    line(out, Map.of("type", "end_of_execution"));
  }

  private static @Nullable String field(String mime) {
    return switch (mime) {
      case "text/plain" -> "text";
      case "text/html" -> "html";
      case "text/markdown" -> "markdown";
      case "image/svg+xml" -> "svg";
      case "image/png" -> "png";
      case "image/jpeg" -> "jpeg";
      case "application/pdf" -> "pdf";
      case "text/latex" -> "latex";
      case "application/json" -> "json";
      case "application/javascript" -> "javascript";
      default -> null;
    };
  }

  private static boolean binary(String mime) {
    return mime.equals("image/png") || mime.equals("image/jpeg") || mime.equals("application/pdf");
  }

  private static String text(RichOutput o) {
    return new String(o.data(), StandardCharsets.UTF_8);
  }

  private static void line(OutputStream out, Map<String, Object> m) throws IOException {
    out.write(Wire.write(m));
    out.write('\n');
    out.flush();
  }

  /** {@code POST /contexts}: a new Python session. */
  void createContext(Context ctx, Registry.Entry e, E2bSandboxes.State s, byte[] b) {
    ObjectNode req = object(b);
    language(req.path("language").isTextual() ? req.get("language").asText() : null);
    String cwd = req.path("cwd").isTextual() ? req.get("cwd").asText() : E2bWire.HOME;
    if (!cwd.equals(E2bWire.HOME) && !cwd.equals(E2bWire.HOME + "/")) {
      throw new E2bErrors.HttpError(
          400,
          "cwd '"
              + Escape.id(cwd)
              + "' is not served: a Python context starts in "
              + E2bWire.HOME
              + " (the workspace); os.chdir in the code to move");
    }
    synchronized (s.contexts) {
      if (s.contexts.size() >= MAX_CONTEXTS || e.sessions().size() >= MAX_CONTEXTS) {
        throw new E2bErrors.HttpError(
            429,
            "this sandbox already has "
                + MAX_CONTEXTS
                + " Python contexts: remove one with removeCodeContext");
      }
      String session = "e2b-ctx-" + s.contextSeq.incrementAndGet();
      CodeContext c = new CodeContext(UUID.randomUUID().toString(), session, E2bWire.HOME);
      e.sessions().add(session);
      s.contexts.put(c.id(), c);
      Exchange.json(ctx, 200, view(c));
    }
  }

  void listContexts(Context ctx, E2bSandboxes.State s) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (CodeContext c : s.contexts.values()) {
      out.add(view(c));
    }
    Exchange.json(ctx, 200, out);
  }

  void removeContext(Context ctx, Registry.Entry e, E2bSandboxes.State s, String id) {
    CodeContext c = s.contexts.remove(id);
    if (c == null) {
      throw new E2bErrors.HttpError(404, "context '" + Escape.id(id) + "' not found");
    }
    e.sandbox().pythonSession(c.session()).close();
    e.sessions().remove(c.session());
    ctx.status(204);
  }

  void restartContext(Context ctx, Registry.Entry e, E2bSandboxes.State s, String id) {
    CodeContext c = s.contexts.get(id);
    if (c == null) {
      throw new E2bErrors.HttpError(404, "context '" + Escape.id(id) + "' not found");
    }
    // Closing ends the interpreter; the next call on the context starts a fresh one.
    e.sandbox().pythonSession(c.session()).close();
    ctx.status(204);
  }

  private static Map<String, Object> view(CodeContext c) {
    return Map.of("id", c.id(), "language", "python", "cwd", c.cwd());
  }

  private static void language(@Nullable String language) {
    if (language == null
        || language.isEmpty()
        || language.equalsIgnoreCase("python")
        || language.equalsIgnoreCase("python3")) {
      return;
    }
    // 404 (no kernel for it): the SDK shows the reason only for 404 and 502, a bare status else.
    throw new E2bErrors.HttpError(
        404,
        "language '"
            + Escape.id(language)
            + "' is not served: AgentNest's code interpreter runs Python; run other languages with"
            + " commands.run");
  }

  private static ObjectNode object(byte[] body) {
    try {
      var n = Wire.JSON.readTree(body.length == 0 ? "{}".getBytes(StandardCharsets.UTF_8) : body);
      if (n != null && n.isObject()) {
        return (ObjectNode) n;
      }
    } catch (IOException e) {
      throw new E2bErrors.HttpError(400, "the body is not valid JSON: " + e.getMessage());
    }
    throw new E2bErrors.HttpError(400, "the body is not a JSON object");
  }
}
