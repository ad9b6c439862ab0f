package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.OutputChunk;
import io.agentnest.RichOutput;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.internal.call.DefaultExecution;
import io.agentnest.internal.support.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A streamed execution on the server, read as server-sent events: {@code started} (the execution's
 * id, for cancel), {@code stdout}/{@code stderr}, {@code truncated}, {@code dropped}, {@code rich},
 * then {@code result}. One daemon reader thread per running stream; it blocks when the consumer is
 * slow (the execution's bounded queue), which backs the server off through TCP.
 */
final class RemoteStream {
  /** The longest SSE line taken from the server (an output chunk is far shorter). */
  static final int MAX_LINE = 8 << 20;

  private final RemoteClient client;
  private final String sandboxPath;
  private final DefaultExecution execution;
  private final @Nullable Consumer<OutputChunk> onOutput;
  private final Object lock = new Object();
  private @Nullable String executionId;
  private @Nullable WebSocket socket;
  private boolean cancelAsked;

  private RemoteStream(
      RemoteClient client, String sandboxPath, ExecOptions options, boolean quiet) {
    this.client = client;
    this.sandboxPath = sandboxPath;
    this.execution = new DefaultExecution(options.streamBuffer(), options.backpressure());
    this.onOutput = options.onOutput();
    if (quiet) {
      // exec()/runCode() with onOutput: nobody iterates the events, only the callback sees them
      execution.subscribe(new Drain());
    }
    execution.onCancel(this::cancel);
  }

  /**
   * Starts {@code body} on {@code route} ({@code /exec} or {@code /code}) and returns once the
   * server has taken it; a refusal (quota, policy, unknown sandbox) is thrown here, as a local
   * start would.
   */
  static Execution start(
      RemoteClient client,
      String sandboxPath,
      String route,
      ObjectNode body,
      ExecOptions options,
      Duration timeout,
      boolean quiet) {
    RemoteStream s = new RemoteStream(client, sandboxPath, options, quiet);
    if (webSocket()) {
      s.openSocket(route, body, timeout);
      return s.execution;
    }
    InputStream in =
        client.stream(
            "POST", sandboxPath + route, body.toString().getBytes(StandardCharsets.UTF_8), timeout);
    Thread t = new Thread(() -> s.read(in), "agentnest-remote-stream");
    t.setDaemon(true);
    t.start();
    return s.execution;
  }

  /**
   * Whether this process streams over WebSocket ({@code AGENTNEST_REMOTE_STREAM=websocket} or the
   * system property {@code agentnest.remote-stream}) instead of server-sent events.
   */
  static boolean webSocket() {
    String v = System.getProperty("agentnest.remote-stream");
    if (v == null) {
      v = System.getenv("AGENTNEST_REMOTE_STREAM");
    }
    if (v == null || v.isBlank() || v.strip().equalsIgnoreCase("sse")) {
      return false;
    }
    if (v.strip().equalsIgnoreCase("websocket")) {
      return true;
    }
    throw new ConfigException(
        "AGENTNEST_REMOTE_STREAM '" + v + "' is unknown: use sse (the default) or websocket");
  }

  /** The stream as a WebSocket: one request message, then the same events as messages. */
  private void openSocket(String route, ObjectNode body, Duration timeout) {
    ObjectNode m = Json.MAPPER.createObjectNode();
    m.put("type", route.equals("/code") ? "code" : "exec");
    m.set("request", body);
    WebSocket ws = client.webSocket(sandboxPath + "/stream", new Listener(), timeout);
    synchronized (lock) {
      socket = ws;
    }
    ws.sendText(m.toString(), true).join();
  }

  /** Reads the server's messages one at a time: the next is asked for once one is handled. */
  private final class Listener implements WebSocket.Listener {
    private final StringBuilder text = new StringBuilder();
    private boolean done;

    @Override
    public void onOpen(WebSocket ws) {
      ws.request(1);
    }

    @Override
    public @Nullable CompletionStage<?> onText(WebSocket ws, CharSequence part, boolean last) {
      text.append(part);
      if (text.length() > MAX_LINE) {
        fail("a message from the server is longer than " + MAX_LINE + " characters");
        ws.abort();
        return null;
      }
      if (last) {
        String message = text.toString();
        text.setLength(0);
        try {
          JsonNode m = Json.MAPPER.readTree(message);
          String event = m.path("event").asText("");
          if (event.equals("error")) {
            JsonNode e = m.path("data").path("error");
            fail(
                "the server refused the stream: "
                    + e.path("message").asText()
                    + " ("
                    + e.path("fix").asText()
                    + ")");
            done = true;
          } else if (dispatch(event, m.path("data"))) {
            done = true;
          }
        } catch (IOException | RuntimeException e) {
          fail("reading the execution's stream from " + client.base() + " failed: " + e);
          ws.abort();
          return null;
        }
      }
      ws.request(1);
      return null;
    }

    @Override
    public @Nullable CompletionStage<?> onClose(WebSocket ws, int status, String reason) {
      if (!done) {
        fail(
            "the server closed the stream ("
                + status
                + (reason.isEmpty() ? "" : " " + reason)
                + ") before the execution's result");
      }
      return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
      if (!done) {
        fail("the stream from " + client.base() + " failed: " + error);
      }
    }
  }

  private void fail(String message) {
    execution.fail(new AgentNestException(message));
  }

  private void cancel() {
    WebSocket ws;
    synchronized (lock) {
      cancelAsked = true;
      ws = socket;
    }
    if (ws != null) {
      ws.sendText("{\"type\": \"cancel\"}", true);
      return;
    }
    String id;
    synchronized (lock) {
      cancelAsked = true;
      id = executionId;
    }
    if (id != null) {
      sendCancel(id);
    }
  }

  private void sendCancel(String id) {
    try {
      client.bytes(
          "POST",
          sandboxPath + "/executions/" + RemoteClient.q(id) + "/cancel",
          new byte[0],
          null,
          Duration.ofSeconds(30));
    } catch (SandboxNotFoundException finished) {
      // it ended meanwhile: its result is on the stream
    } catch (RuntimeException e) {
      execution.fail(e);
    }
  }

  private void read(InputStream in) {
    String event = "message";
    StringBuilder data = new StringBuilder();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16)) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.length() > MAX_LINE) {
          throw new IOException("a server-sent line is longer than " + MAX_LINE + " characters");
        }
        if (line.isEmpty()) {
          if (data.length() > 0 && dispatch(event, Json.MAPPER.readTree(data.toString()))) {
            return;
          }
          event = "message";
          data.setLength(0);
        } else if (line.startsWith("event:")) {
          event = line.substring(6).strip();
        } else if (line.startsWith("data:")) {
          if (data.length() > 0) {
            data.append('\n');
          }
          data.append(line.substring(5).stripLeading());
          if (data.length() > MAX_LINE) {
            throw new IOException("a server-sent event is longer than " + MAX_LINE + " bytes");
          }
        }
        // ':' comments are the server's keep-alives
      }
      execution.fail(
          new AgentNestException(
              "the server's stream ended before the execution's result: the connection to "
                  + client.base()
                  + " was lost; the command may still be running there"));
    } catch (IOException | RuntimeException e) {
      execution.fail(
          new AgentNestException(
              "reading the execution's stream from " + client.base() + " failed: " + e, e));
    }
  }

  /** Handles one event; true once the result has arrived. */
  private boolean dispatch(String event, JsonNode d) {
    switch (event) {
      case "started" -> {
        String id = d.path("execution").asText("");
        boolean cancelNow;
        synchronized (lock) {
          executionId = id;
          cancelNow = cancelAsked;
        }
        if (cancelNow && !id.isEmpty() && socket == null) {
          sendCancel(id);
        }
      }
      case "stdout", "stderr" -> {
        OutputChunk c =
            new OutputChunk(
                event.equals("stdout") ? OutputChunk.Stream.STDOUT : OutputChunk.Stream.STDERR,
                d.path("text").asText("").getBytes(StandardCharsets.UTF_8));
        Consumer<OutputChunk> cb = onOutput;
        if (cb != null) {
          cb.accept(c);
        }
        execution.accept(new ExecEvent.Output(c));
      }
      case "truncated" ->
          execution.accept(new ExecEvent.Truncated(d.path("deliveredBytes").asLong()));
      case "dropped" -> execution.accept(new ExecEvent.Dropped(d.path("bytes").asLong()));
      case "rich" ->
          execution.accept(
              new ExecEvent.Rich(
                  new RichOutput(
                      d.path("mimeType").asText("application/octet-stream"),
                      Base64.getDecoder().decode(d.path("base64").asText("")))));
      case "result" -> {
        ExecResult result = RemoteSandbox.result(d);
        execution.accept(new ExecEvent.Finished(result));
        return true;
      }
      case "error" -> {
        // the execution failed after the stream began: the error a whole result would have had
        byte[] body;
        try {
          body = Json.MAPPER.writeValueAsBytes(Map.of("error", d));
        } catch (IOException e) {
          body = new byte[0];
        }
        execution.fail(client.error(d.path("status").asInt(500), body));
        return true;
      }
      default -> {
        // an event this client does not know yet: skipped, as SSE says
      }
    }
    return false;
  }

  /** Takes every event so the queue never fills when only {@code onOutput} listens. */
  private static final class Drain implements Flow.Subscriber<ExecEvent> {
    @Override
    public void onSubscribe(Flow.Subscription s) {
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(ExecEvent item) {}

    @Override
    public void onError(Throwable throwable) {}

    @Override
    public void onComplete() {}
  }
}
