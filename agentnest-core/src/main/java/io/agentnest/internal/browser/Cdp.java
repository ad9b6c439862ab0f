package io.agentnest.internal.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A DevTools-protocol session over one WebSocket: commands by id, their answers, and events to one
 * listener. A message from the browser is bounded ({@link #MAX_MESSAGE}); past it the session ends
 * rather than grow host memory.
 */
final class Cdp implements AutoCloseable {
  static final int MAX_MESSAGE = 48 << 20;

  private final WebSocket socket;
  private final AtomicLong ids = new AtomicLong();
  private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
  private volatile Consumer<JsonNode> events = e -> {};
  private volatile @Nullable String closedReason;

  private Cdp(WebSocket socket) {
    this.socket = socket;
  }

  static Cdp connect(HttpClient http, URI ws, Duration timeout) {
    Listener l = new Listener();
    try {
      WebSocket s =
          http.newWebSocketBuilder()
              .connectTimeout(timeout)
              .buildAsync(ws, l)
              .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      Cdp cdp = new Cdp(s);
      l.cdp = cdp;
      return cdp;
    } catch (ExecutionException | TimeoutException e) {
      throw new AgentNestException("cannot open the browser's DevTools session: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while connecting to the browser", e);
    }
  }

  void onEvent(Consumer<JsonNode> listener) {
    this.events = listener;
  }

  /** Sends {@code method} and waits for its result; a protocol error becomes an exception. */
  JsonNode call(String method, ObjectNode params, Duration timeout) {
    String dead = closedReason;
    if (dead != null) {
      throw new AgentNestException("the browser's DevTools session ended: " + dead);
    }
    long id = ids.incrementAndGet();
    CompletableFuture<JsonNode> f = new CompletableFuture<>();
    pending.put(id, f);
    ObjectNode msg = Json.object().put("id", id).put("method", method);
    msg.set("params", params);
    try {
      socket.sendText(msg.toString(), true).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      JsonNode answer = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (answer.has("error")) {
        throw new AgentNestException(
            "browser " + method + " failed: " + answer.path("error").path("message").asText());
      }
      return answer.path("result");
    } catch (TimeoutException e) {
      throw new AgentNestException(
          "the browser did not answer " + method + " within " + timeout.toMillis() + " ms");
    } catch (ExecutionException e) {
      throw new AgentNestException("browser " + method + " failed: " + e.getCause(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while waiting for the browser", e);
    } finally {
      pending.remove(id);
    }
  }

  private void message(String text) {
    JsonNode m;
    try {
      m = Json.MAPPER.readTree(text);
    } catch (IOException e) {
      return;
    }
    if (m.has("id")) {
      CompletableFuture<JsonNode> f = pending.get(m.path("id").asLong());
      if (f != null) {
        f.complete(m);
      }
    } else if (m.has("method")) {
      events.accept(m);
    }
  }

  private void end(String reason) {
    closedReason = reason;
    pending.values().forEach(f -> f.completeExceptionally(new IOException(reason)));
  }

  @Override
  public void close() {
    end("closed");
    socket.abort();
  }

  private static final class Listener implements WebSocket.Listener {
    private final StringBuilder partial = new StringBuilder();
    volatile @Nullable Cdp cdp;

    @Override
    public @Nullable CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      if (partial.length() + data.length() > MAX_MESSAGE) {
        Cdp c = cdp;
        if (c != null) {
          c.end("a DevTools message over " + MAX_MESSAGE + " bytes");
        }
        ws.abort();
        return null;
      }
      partial.append(data);
      if (last) {
        String text = partial.toString();
        partial.setLength(0);
        Cdp c = cdp;
        if (c != null) {
          c.message(text);
        }
      }
      ws.request(1);
      return null;
    }

    @Override
    public @Nullable CompletionStage<?> onClose(WebSocket ws, int status, String reason) {
      Cdp c = cdp;
      if (c != null) {
        c.end("the browser closed the session (" + status + ")");
      }
      return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
      Cdp c = cdp;
      if (c != null) {
        c.end("the session failed: " + error);
      }
    }
  }
}
