package io.agentnest.docker.internal;

import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import io.agentnest.AgentNestException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Engine calls docker-java has no command for (checkpoints, a streamed image import): one short
 * lived HTTP client per call, since they are rare and long.
 */
final class EngineHttp {
  private final URI host;
  private final EngineErrors errors;

  EngineHttp(URI host, EngineErrors errors) {
    this.host = host;
    this.errors = errors;
  }

  /** Sends one request; fails on any non-2xx status with the engine's own words (bounded). */
  void call(String method, String path, @Nullable String json) {
    DockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(host)
            .maxConnections(1)
            .responseTimeout(Duration.ofMinutes(5))
            .build();
    DockerHttpClient.Request.Builder b =
        DockerHttpClient.Request.builder()
            .method(DockerHttpClient.Request.Method.valueOf(method))
            .path(path);
    if (json != null) {
      b.putHeader("Content-Type", "application/json")
          .bodyBytes(json.getBytes(StandardCharsets.UTF_8));
    }
    try (http;
        DockerHttpClient.Response resp = http.execute(b.build())) {
      int code = resp.getStatusCode();
      if (code / 100 != 2) {
        byte[] body = resp.getBody().readNBytes(4096);
        throw new AgentNestException(
            "Docker refused "
                + method
                + " "
                + path.replaceAll("\\?.*", "")
                + " (HTTP "
                + code
                + "): "
                + new String(body, StandardCharsets.UTF_8).strip());
      }
    } catch (IOException e) {
      throw new AgentNestException("Docker call " + method + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * Imports a root filesystem tar as an image ({@code docker import}), with Dockerfile-style {@code
   * changes}. Returns the engine's last status line.
   */
  String importImage(InputStream tar, String repo, String tag, List<String> changes) {
    StringBuilder path = new StringBuilder("/images/create?fromSrc=-");
    path.append("&repo=").append(enc(repo)).append("&tag=").append(enc(tag));
    for (String c : changes) {
      path.append("&changes=").append(enc(c));
    }
    DockerHttpClient http =
        new ApacheDockerHttpClient.Builder().dockerHost(host).maxConnections(1).build();
    try (http;
        DockerHttpClient.Response resp =
            http.execute(
                DockerHttpClient.Request.builder()
                    .method(DockerHttpClient.Request.Method.POST)
                    .path(path.toString())
                    .putHeader("Content-Type", "application/x-tar")
                    .body(tar)
                    .build())) {
      byte[] body = resp.getBody().readNBytes(1 << 20);
      String text = new String(body, StandardCharsets.UTF_8);
      if (resp.getStatusCode() != 200 || text.contains("\"error")) {
        throw new AgentNestException(
            "Docker could not import the image (HTTP "
                + resp.getStatusCode()
                + "): "
                + text.strip());
      }
      return text.strip();
    } catch (IOException e) {
      throw new AgentNestException("image import failed: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      if (e instanceof AgentNestException ane) {
        throw ane;
      }
      throw errors.unavailable(e);
    }
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
