package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.FileOperationException;
import io.agentnest.RemoteServer;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.SnapshotException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.internal.support.Json;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.ssl.ClientTlsStrategyBuilder;
import org.apache.hc.core5.http.ConnectionClosedException;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.io.entity.ByteArrayEntity;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.InputStreamEntity;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;
import org.jspecify.annotations.Nullable;

/** HTTP calls to the server, and its JSON errors turned back into the API's exceptions. */
final class RemoteClient {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

  /**
   * One client for every remote sandbox of this process: its kept-alive connections are reused by
   * all of them (a client per sandbox paid a TCP connect, a selector thread and a cold pool per
   * sandbox). HTTP/1.1 because the server speaks only that: asking for HTTP/2 on {@code http://}
   * adds an {@code Upgrade: h2c} round of headers the server ignores.
   */
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(CONNECT_TIMEOUT)
          .build();

  /**
   * The client of calls that answer once (everything but streams and sockets): blocking I/O on the
   * caller's thread over pooled kept-alive connections. The JDK client hands every exchange to its
   * selector thread and an executor and back, which cost about 0.25 ms a call on loopback here and
   * made the selector and its pool's locks the queue under 200 concurrent callers (`agentnest bench
   * --only server`). Created on first use, shared by every remote sandbox of the process.
   */
  private static final class Unary {
    static final CloseableHttpClient CLIENT = create();

    private static CloseableHttpClient create() {
      SSLContext tls;
      try {
        // the JDK's default context, so javax.net.ssl.trustStore and friends apply as before
        tls = SSLContext.getDefault();
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("no default TLS context in this JVM", e);
      }
      return HttpClients.custom()
          .setConnectionManager(
              PoolingHttpClientConnectionManagerBuilder.create()
                  .setTlsSocketStrategy(
                      ClientTlsStrategyBuilder.create().setSslContext(tls).buildClassic())
                  .setMaxConnTotal(MAX_CONNECTIONS)
                  .setMaxConnPerRoute(MAX_CONNECTIONS)
                  .setDefaultConnectionConfig(
                      ConnectionConfig.custom()
                          .setConnectTimeout(Timeout.of(CONNECT_TIMEOUT))
                          // a connection the server closed while idle is found before it is used
                          .setValidateAfterInactivity(TimeValue.ofSeconds(1))
                          .build())
                  .build())
          .evictIdleConnections(TimeValue.ofSeconds(30))
          .disableRedirectHandling()
          .disableCookieManagement()
          .disableAuthCaching()
          .disableContentCompression()
          .setRetryStrategy(new IdempotentRetry())
          .setUserAgent("agentnest-remote")
          .build();
    }
  }

  /**
   * A request the server never answered on a kept-alive connection it had just closed is sent again
   * once, if its method is idempotent (GET, PUT, DELETE): never an exec or a create, which might
   * have run. Answers (429, 503) are the caller's: no status is retried.
   */
  private static final class IdempotentRetry extends DefaultHttpRequestRetryStrategy {
    IdempotentRetry() {
      super(
          1,
          TimeValue.ZERO_MILLISECONDS,
          List.of(
              InterruptedIOException.class,
              UnknownHostException.class,
              ConnectException.class,
              ConnectionClosedException.class,
              NoRouteToHostException.class,
              SSLException.class),
          List.of());
    }
  }

  /**
   * Connections kept per process: a call holds one while it runs, so this bounds parallel calls.
   */
  private static final int MAX_CONNECTIONS = 1024;

  private final RemoteServer server;
  private final HttpClient http;

  RemoteClient(RemoteServer server) {
    this.server = server;
    this.http = HTTP;
  }

  String base() {
    String u = server.url().toString();
    return u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
  }

  static String q(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  JsonNode json(String method, String path, ObjectNode body, Duration timeout) {
    return parse(
        bytes(
            method,
            path,
            body.toString().getBytes(StandardCharsets.UTF_8),
            "application/json",
            timeout));
  }

  JsonNode get(String path) {
    return parse(bytes("GET", path, new byte[0], null, Duration.ofSeconds(60)));
  }

  JsonNode parse(byte[] body) {
    if (body.length == 0) {
      return Json.MAPPER.createObjectNode();
    }
    try {
      return Json.MAPPER.readTree(body);
    } catch (IOException e) {
      throw new AgentNestException(
          "the server at " + server.url() + " answered no JSON: " + e.getMessage(), e);
    }
  }

  /** A request of the unary client with the API key and {@code timeout} for its answer. */
  private HttpUriRequestBase request(String method, String path, Duration timeout) {
    HttpUriRequestBase req = new HttpUriRequestBase(method, URI.create(base() + path));
    req.setConfig(
        RequestConfig.custom()
            .setResponseTimeout(Timeout.of(timeout))
            .setConnectionRequestTimeout(Timeout.of(timeout))
            .build());
    req.setHeader("Authorization", "Bearer " + server.apiKey().reveal());
    return req;
  }

  byte[] bytes(
      String method, String path, byte[] body, @Nullable String contentType, Duration timeout) {
    HttpUriRequestBase req = request(method, path, timeout);
    if (!method.equals("GET") && !method.equals("HEAD")) {
      req.setEntity(
          new ByteArrayEntity(
              body, contentType == null ? null : ContentType.parse(contentType), false));
    }
    int[] status = {0};
    byte[] answer;
    try {
      answer =
          Unary.CLIENT.execute(
              req,
              r -> {
                status[0] = r.getCode();
                HttpEntity e = r.getEntity();
                return e == null ? new byte[0] : EntityUtils.toByteArray(e);
              });
    } catch (IOException e) {
      throw unreachable(e);
    }
    if (status[0] >= 400) {
      throw error(status[0], answer);
    }
    return answer;
  }

  /**
   * As {@link #bytes}, streamed both ways: the body is read from {@code in} (when given) as it is
   * sent, and a successful answer is copied into {@code out} (when given) as it arrives; without
   * {@code out} the answer is returned. Refusals are thrown as by {@link #bytes}.
   */
  byte[] transfer(
      String method,
      String path,
      @Nullable InputStream in,
      @Nullable OutputStream out,
      Duration timeout) {
    HttpUriRequestBase req = request(method, path, timeout);
    IOException[] sourceFailed = {null};
    if (in != null) {
      // A failing source is the caller's error, not an unreachable server: told apart here.
      InputStream watched =
          new FilterInputStream(in) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
              try {
                return super.read(b, off, len);
              } catch (IOException e) {
                sourceFailed[0] = e;
                throw e;
              }
            }
          };
      req.setEntity(new InputStreamEntity(watched, -1, ContentType.APPLICATION_OCTET_STREAM));
    }
    int[] status = {0};
    IOException[] sinkFailed = {null};
    byte[] answer;
    try {
      answer =
          Unary.CLIENT.execute(
              req,
              r -> {
                status[0] = r.getCode();
                HttpEntity e = r.getEntity();
                if (e == null) {
                  return new byte[0];
                }
                if (out == null || status[0] >= 400) {
                  return EntityUtils.toByteArray(e);
                }
                try (InputStream body = e.getContent()) {
                  byte[] buf = new byte[1 << 16];
                  for (int n; (n = body.read(buf)) > 0; ) {
                    try {
                      out.write(buf, 0, n);
                    } catch (IOException sink) {
                      sinkFailed[0] = sink;
                      break;
                    }
                  }
                }
                return new byte[0];
              });
    } catch (IOException e) {
      if (sourceFailed[0] != null) {
        throw new UncheckedIOException(
            "reading the content for " + path + " failed: " + sourceFailed[0].getMessage(),
            sourceFailed[0]);
      }
      throw unreachable(e);
    }
    if (sinkFailed[0] != null) {
      throw new UncheckedIOException(
          "writing the answer of " + path + " out failed: " + sinkFailed[0].getMessage(),
          sinkFailed[0]);
    }
    if (status[0] >= 400) {
      throw error(status[0], answer);
    }
    return answer;
  }

  /**
   * A request whose answer is a stream of server-sent events; returns once the server has answered
   * 200 (its refusals are thrown as by {@link #bytes}). The caller reads and closes the stream.
   */
  InputStream stream(String method, String path, byte[] body, Duration timeout) {
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(base() + path))
            .timeout(timeout)
            .header("Authorization", "Bearer " + server.apiKey().reveal())
            .header("Accept", "text/event-stream")
            .header("Content-Type", "application/json")
            .method(method, HttpRequest.BodyPublishers.ofByteArray(body))
            .build();
    HttpResponse<InputStream> r;
    try {
      r = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
    } catch (IOException e) {
      throw unreachable(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while calling " + server.url(), e);
    }
    if (r.statusCode() >= 400) {
      byte[] err;
      try (InputStream in = r.body()) {
        err = in.readNBytes(1 << 20);
      } catch (IOException e) {
        err = new byte[0];
      }
      throw error(r.statusCode(), err);
    }
    return r.body();
  }

  /** Opens a WebSocket on {@code path} with the API key; a refused upgrade is thrown here. */
  WebSocket webSocket(String path, WebSocket.Listener listener, Duration timeout) {
    String u = base() + path;
    URI uri = URI.create(u.startsWith("https:") ? "wss:" + u.substring(6) : "ws:" + u.substring(5));
    try {
      return http.newWebSocketBuilder()
          .header("Authorization", "Bearer " + server.apiKey().reveal())
          .connectTimeout(timeout)
          .buildAsync(uri, listener)
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof WebSocketHandshakeException h) {
        Object body = h.getResponse().body();
        throw error(
            h.getResponse().statusCode(),
            body instanceof String b ? b.getBytes(StandardCharsets.UTF_8) : new byte[0]);
      }
      throw unreachable(c instanceof IOException io ? io : new IOException(String.valueOf(c), c));
    } catch (TimeoutException e) {
      throw unreachable(new IOException("no WebSocket within " + timeout, e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while calling " + server.url(), e);
    }
  }

  private BackendUnavailableException unreachable(IOException e) {
    return new BackendUnavailableException(
        "the AgentNest server at "
            + server.url()
            + " is not reachable: "
            + e.getMessage()
            + "; check AGENTNEST_URL and that `agentnest serve` runs",
        e);
  }

  private static SnapshotException.Reason snapshotReason(String wire) {
    for (SnapshotException.Reason r : SnapshotException.Reason.values()) {
      if (r.name().equals(wire)) {
        return r;
      }
    }
    // A reason this client does not know yet: the server's message says what it was.
    return SnapshotException.Reason.IO;
  }

  /** The exception for an error body, whether it came as a response or a stream's last event. */
  RuntimeException error(int status, byte[] body) {
    String code = "";
    String message = "HTTP " + status;
    String fix = "";
    String reason = "";
    try {
      JsonNode e = Json.MAPPER.readTree(body).path("error");
      code = e.path("code").asText("");
      message = e.path("message").asText(message);
      fix = e.path("fix").asText("");
      reason = e.path("reason").asText("");
    } catch (IOException | RuntimeException notJson) {
      // a proxy's HTML page: the status says enough
    }
    String text = "server: " + message + (fix.isEmpty() ? "" : " (" + fix + ")");
    if (code.equals("approval_denied")) {
      try {
        JsonNode e = Json.MAPPER.readTree(body).path("error");
        return new ApprovalDeniedException(
            e.path("kind").asText("operation"),
            e.path("target").asText(""),
            "server: " + e.path("reason").asText(message));
      } catch (IOException notJson) {
        return new AgentNestException(text);
      }
    }
    if (code.equals("snapshot")) {
      return new SnapshotException(snapshotReason(reason), text);
    }
    if (!reason.isEmpty()) {
      return new FileOperationException(FileOperationException.Reason.fromWire(reason), text);
    }
    return switch (code) {
      case "bad_path" -> new FileOperationException(FileOperationException.Reason.BAD_PATH, text);
      case "not_found" -> new SandboxNotFoundException(text);
      case "policy" -> new UnsupportedControlException(text);
      case "invalid_field", "unknown_field", "malformed_json", "body_too_large" ->
          new ConfigException(text);
      case "unauthenticated", "key_revoked", "key_expired" ->
          new ConfigException(text + "; check AGENTNEST_API_KEY");
      default -> new AgentNestException(text);
    };
  }
}
