package io.agentnest.internal.browser;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
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
 * listener. Whatever speaks on the other end runs in the sandbox, so every message is untrusted: it
 * is bounded ({@link #MAX_MESSAGE}), scanned as a stream under a nesting and token bound before
 * anything is built, and turned into a tree only when it answers a pending call or is an event the
 * listener asked for (issue 42: 48 MiB messages once became 1.2 GB trees). A message past a bound
 * ends the session, with the bound named.
 */
final class Cdp implements AutoCloseable {
  /** The largest message, in chars: a 1280x800 PNG screenshot in base64 fits several times. */
  static final int MAX_MESSAGE = 8 << 20;

  /** Deeper than any DevTools answer this host reads (they nest a handful of levels). */
  static final int MAX_DEPTH = 32;

  /** Values per message: a parsed message costs at most a few dozen bytes per token. */
  static final long MAX_TOKENS = 200_000;

  static final ObjectMapper BOUNDED =
      new ObjectMapper(
          JsonFactory.builder()
              .streamReadConstraints(
                  StreamReadConstraints.builder()
                      .maxNestingDepth(MAX_DEPTH)
                      .maxTokenCount(MAX_TOKENS)
                      .maxStringLength(MAX_MESSAGE)
                      .maxNumberLength(100)
                      .build())
              .build());

  private final WebSocket socket;
  private final AtomicLong ids = new AtomicLong();
  private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
  private volatile Consumer<JsonNode> events = e -> {};
  private volatile Set<String> wanted = Set.of();
  private volatile @Nullable String closedReason;

  Cdp(WebSocket socket) {
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

  /** Events of {@code methods} go to {@code listener}; all others are dropped unparsed. */
  void onEvent(Set<String> methods, Consumer<JsonNode> listener) {
    this.wanted = Set.copyOf(methods);
    this.events = listener;
  }

  /** What the streaming scan of one message found at its top level. */
  record Head(long id, @Nullable String method) {
    static final long NO_ID = Long.MIN_VALUE;
  }

  /**
   * Scans {@code text} as a stream, building nothing: its top-level {@code id} and {@code method},
   * or the bound it breaks.
   *
   * @throws IOException for a message that is not one JSON object within the bounds
   */
  static Head scan(String text) throws IOException {
    try (JsonParser p = BOUNDED.getFactory().createParser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      long id = Head.NO_ID;
      String method = null;
      int depth = 1;
      JsonToken t;
      while ((t = p.nextToken()) != null) {
        if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
          depth++;
        } else if (t == JsonToken.END_OBJECT || t == JsonToken.END_ARRAY) {
          depth--;
        } else if (depth == 1 && t == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          JsonToken v = p.nextToken();
          if (v == JsonToken.START_OBJECT || v == JsonToken.START_ARRAY) {
            depth++;
          } else if ("id".equals(name) && v == JsonToken.VALUE_NUMBER_INT) {
            id = p.getLongValue();
          } else if ("method".equals(name) && v == JsonToken.VALUE_STRING) {
            method = p.getText();
          }
        }
        if (depth == 0) {
          if (p.nextToken() != null) {
            throw new IOException("more than one JSON value");
          }
          return new Head(id, method);
        }
      }
      throw new IOException("the message ends inside its JSON object");
    } catch (StreamConstraintsException e) {
      throw new IOException(
          "the message breaks a bound (depth "
              + MAX_DEPTH
              + ", "
              + MAX_TOKENS
              + " values): "
              + Bounded.text(String.valueOf(e.getOriginalMessage()), 200),
          e);
    }
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
    Head head;
    try {
      head = scan(text);
    } catch (IOException e) {
      // The browser itself sends nothing of the kind: whatever does is not to be talked to.
      end("a DevTools message was refused unparsed: " + e.getMessage());
      socket.abort();
      return;
    }
    CompletableFuture<JsonNode> f = null;
    if (head.id() != Head.NO_ID) {
      f = pending.get(head.id());
      if (f == null) {
        return; // no call waits for it: nothing is built
      }
    } else if (head.method() == null || !wanted.contains(head.method())) {
      return;
    }
    JsonNode m;
    try {
      m = BOUNDED.readTree(text);
    } catch (IOException e) {
      return; // scanned already: cannot happen but for a bound, which scan() reported
    }
    if (f != null) {
      f.complete(m);
    } else {
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

  static final class Listener implements WebSocket.Listener {
    private final StringBuilder partial = new StringBuilder();
    volatile @Nullable Cdp cdp;

    @Override
    public @Nullable CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      if (partial.length() + data.length() > MAX_MESSAGE) {
        Cdp c = cdp;
        if (c != null) {
          c.end(
              "a DevTools message over "
                  + (MAX_MESSAGE >> 20)
                  + " MiB was refused (the page's HTML or a screenshot is too large, or the"
                  + " other end is not the browser)");
        }
        partial.setLength(0);
        partial.trimToSize();
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
