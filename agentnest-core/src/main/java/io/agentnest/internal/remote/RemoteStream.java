package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
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
    InputStream in =
        client.stream(
            "POST", sandboxPath + route, body.toString().getBytes(StandardCharsets.UTF_8), timeout);
    Thread t = new Thread(() -> s.read(in), "agentnest-remote-stream");
    t.setDaemon(true);
    t.start();
    return s.execution;
  }

  private void cancel() {
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
          if (data.length() > 0 && dispatch(event, data.toString())) {
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
  private boolean dispatch(String event, String data) throws IOException {
    JsonNode d = Json.MAPPER.readTree(data);
    switch (event) {
      case "started" -> {
        String id = d.path("execution").asText("");
        boolean cancelNow;
        synchronized (lock) {
          executionId = id;
          cancelNow = cancelAsked;
        }
        if (cancelNow && !id.isEmpty()) {
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
