package io.agentnest.server.v1;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ExecEvent;
import io.agentnest.Execution;
import io.agentnest.server.approvals.ApproverRole;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.OpenStreams;
import io.agentnest.server.http.StreamThreads;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.Registry;
import io.agentnest.server.service.SandboxService;
import io.agentnest.server.tenancy.Tenant;
import io.javalin.websocket.WsCloseStatus;
import io.javalin.websocket.WsConfig;
import io.javalin.websocket.WsContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.websocket.api.Callback;

/**
 * {@code GET /v1/sandboxes/{id}/stream} upgraded to a WebSocket: the other way to stream an
 * execution (the client picks; server-sent events are the first). The upgrade is authenticated and
 * rate-limited like every route; then the client sends one request, {@code {"type": "exec",
 * "request": Exec}} or {@code {"type": "code", "request": Code}}, and gets the same events as the
 * server-sent stream, each a text message {@code {"event": NAME, "data": ...}}: {@code started},
 * {@code stdout}/{@code stderr}, {@code truncated}, {@code dropped}, {@code rich}, {@code result};
 * then the server closes (1000). {@code {"type": "cancel"}} stops the execution (the result then
 * says cancelled); a client that goes away cancels it too, unless the request said {@code
 * "onDisconnect": "continue"}. A refusal is an {@code error} event with the same body as an HTTP
 * error, then a close. One execution per socket; each message waits for the client's TCP window, so
 * a slow client holds back only its own execution (bounded queues).
 */
public final class ExecSocket implements AutoCloseable {
  public static final String PATH = "/v1/sandboxes/{id}/stream";
  private static final Duration SEND = Duration.ofSeconds(60);

  private final SandboxService api;
  private final Registry registry;
  private final long maxJsonBytes;
  private final Map<String, Execution> running = new ConcurrentHashMap<>();

  /** Sockets whose execution runs on when the client leaves ({@code onDisconnect: continue}). */
  private final Set<String> keep = ConcurrentHashMap.newKeySet();

  private final ExecutorService pumps =
      StreamThreads.pool("agentnest-server-ws", StreamThreads.MAX_PUMPS);

  private final OpenStreams streams;

  public ExecSocket(SandboxService api, Registry registry, long maxJsonBytes, OpenStreams streams) {
    this.streams = streams;
    this.api = api;
    this.registry = registry;
    this.maxJsonBytes = maxJsonBytes;
  }

  public void configure(WsConfig ws) {
    ws.onConnect(
        ctx -> {
          ctx.session.setMaxTextMessageSize(maxJsonBytes);
          ctx.session.setIdleTimeout(Duration.ofMinutes(5));
          try {
            entry(ctx);
          } catch (ApiException e) {
            refuse(ctx, e);
          }
        });
    ws.onMessage(
        ctx -> {
          try {
            handle(ctx, Wire.JSON.readTree(ctx.message()));
          } catch (ApiException e) {
            refuse(ctx, e);
          } catch (IOException | RuntimeException e) {
            refuse(
                ctx,
                ApiException.badRequest(
                    ErrorCode.MALFORMED_JSON,
                    "the message is not a request: " + Escape.id(String.valueOf(e.getMessage())),
                    "send {\"type\": \"exec\", \"request\": {\"command\": \"ls\"}}"));
          }
        });
    ws.onClose(ctx -> closed(ctx));
    ws.onError(ctx -> closed(ctx));
  }

  private Registry.Entry entry(WsContext ctx) {
    Tenant t = ctx.attribute(Exchange.TENANT);
    if (t == null) {
      throw new IllegalStateException("a stream reached without authentication");
    }
    return registry.get(t.name(), ctx.pathParam("id"));
  }

  private void handle(WsContext ctx, JsonNode m) throws IOException {
    String op = m.path("type").asText("");
    if (op.equals("cancel")) {
      cancel(ctx);
      return;
    }
    if (running.containsKey(ctx.sessionId())) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "an execution already runs on this stream",
          "open another stream for another execution, or send {\"type\": \"cancel\"}");
    }
    Tenant t = ctx.attribute(Exchange.TENANT);
    if (t == null) {
      throw new IllegalStateException("a stream reached without authentication");
    }
    Registry.Entry e = entry(ctx);
    JsonNode req = m.path("request");
    SandboxService.Call call =
        switch (op) {
          case "exec" -> api.exec(t, e, Wire.read(bytes(req), Wire.Exec.class));
          case "code" -> api.code(t, e, Wire.read(bytes(req), Wire.Code.class));
          default ->
              throw ApiException.badRequest(
                  ErrorCode.INVALID_FIELD,
                  "type '" + Escape.id(op) + "' is unknown",
                  "send type exec, code or cancel");
        };
    Execution x = SandboxService.start(call);
    running.put(ctx.sessionId(), x);
    if (call.keepOnLeave()) {
      keep.add(ctx.sessionId());
    }
    // The key that opened the stream is checked while it runs: revoked, the stream is cut.
    OpenStreams.Watch watch =
        streams.watch(
            ctx.attribute(ApproverRole.KEY_ID),
            () -> {
              keep.remove(ctx.sessionId());
              ctx.closeSession(WsCloseStatus.POLICY_VIOLATION, "key_revoked");
              x.cancel();
            });
    try {
      pumps.execute(
          () -> {
            try (watch) {
              pump(ctx, x);
            }
          });
    } catch (RejectedExecutionException full) {
      watch.close();
      running.remove(ctx.sessionId());
      keep.remove(ctx.sessionId());
      x.cancel();
      throw StreamThreads.full("stream", StreamThreads.MAX_PUMPS);
    }
  }

  private static byte[] bytes(JsonNode req) {
    if (!req.isObject()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "'request' is missing or not an object",
          "send {\"type\": \"exec\", \"request\": {\"command\": \"ls\"}}");
    }
    return req.toString().getBytes(StandardCharsets.UTF_8);
  }

  private void pump(WsContext ctx, Execution x) {
    try {
      send(ctx, new Wire.Event("started", Map.of("execution", ctx.sessionId())));
      for (ExecEvent ev : x) {
        Wire.Event event = Wire.event(ev);
        if (event != null) {
          send(ctx, event);
        }
      }
      ctx.closeSession(WsCloseStatus.NORMAL_CLOSURE, "done");
    } catch (IOException | RuntimeException | TimeoutException e) {
      left(ctx, x);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      x.cancel();
    } finally {
      running.remove(ctx.sessionId());
      keep.remove(ctx.sessionId());
    }
  }

  /** The client is gone: stop the execution, or let it run on with its events dropped. */
  private void left(WsContext ctx, Execution x) {
    if (!keep.contains(ctx.sessionId())) {
      x.cancel();
      return;
    }
    try {
      for (ExecEvent ignored : x) {
        // dropped: nobody reads them; the execution's own timeout bounds this
      }
    } catch (RuntimeException ended) {
      // it failed or was stopped: nothing more to take
    }
  }

  /** Sends one message and waits until the client's window took it (bounded). */
  private static void send(WsContext ctx, Object message)
      throws IOException, InterruptedException, TimeoutException {
    Callback.Completable done = new Callback.Completable();
    ctx.session.sendText(new String(Wire.write(message), StandardCharsets.UTF_8), done);
    try {
      done.get(SEND.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new IOException("the client did not take the message: " + e.getCause(), e);
    }
  }

  private void cancel(WsContext ctx) {
    Execution x = running.remove(ctx.sessionId());
    if (x != null) {
      x.cancel();
    }
  }

  /** The socket closed: its execution stops unless it asked to run on. */
  private void closed(WsContext ctx) {
    if (!keep.contains(ctx.sessionId())) {
      cancel(ctx);
    }
  }

  private static void refuse(WsContext ctx, ApiException e) {
    try {
      send(ctx, new Wire.Event("error", Wire.error(e)));
    } catch (IOException | TimeoutException | RuntimeException ignored) {
      // the close below says enough
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
    ctx.closeSession(WsCloseStatus.POLICY_VIOLATION, reason(e));
  }

  private static String reason(ApiException e) {
    String r = e.code().name().toLowerCase(Locale.ROOT);
    return r.length() > 100 ? r.substring(0, 100) : r;
  }

  @Override
  public void close() {
    running.values().forEach(Execution::cancel);
    pumps.shutdownNow();
  }
}
