package io.agentnest.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** A small HTTP client for the tests: JSON in and out, with or without a key. */
public final class Http {
  static final ObjectMapper JSON = new ObjectMapper();

  public record Reply(int status, byte[] body, HttpResponse<byte[]> raw) {
    public JsonNode json() {
      try {
        return JSON.readTree(body);
      } catch (IOException e) {
        throw new UncheckedIOException("not JSON: " + text(), e);
      }
    }

    public String text() {
      return new String(body, StandardCharsets.UTF_8);
    }

    public String errorCode() {
      return json().path("error").path("code").asText();
    }
  }

  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  final String base;

  Http(int port) {
    this.base = "http://127.0.0.1:" + port;
  }

  /** The server's base URL, for requests this helper does not make (cookies, raw headers). */
  public String base() {
    return base;
  }

  public Reply send(
      String method, String path, @Nullable String key, byte[] body, String contentType) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(base + path))
            .timeout(Duration.ofSeconds(120))
            .method(method, HttpRequest.BodyPublishers.ofByteArray(body));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    if (body.length > 0) {
      b.header("Content-Type", contentType);
    }
    try {
      HttpResponse<byte[]> r = client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
      return new Reply(r.statusCode(), r.body(), r);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public Reply json(String method, String path, @Nullable String key, String json) {
    return send(method, path, key, json.getBytes(StandardCharsets.UTF_8), "application/json");
  }

  /** Creates a sandbox for {@code key} from {@code json}; the test fails unless it is made. */
  public String created(String key, String json) {
    Reply r = json("POST", "/v1/sandboxes", key, json);
    if (r.status() != 201) {
      throw new AssertionError("create answered " + r.status() + ": " + r.text());
    }
    return r.json().get("id").asText();
  }

  public Reply get(String path, @Nullable String key) {
    return send("GET", path, key, new byte[0], "");
  }

  public Reply delete(String path, @Nullable String key) {
    return send("DELETE", path, key, new byte[0], "");
  }
}
