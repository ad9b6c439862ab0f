package io.agentnest.docker.internal;

import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import io.agentnest.BackendUnavailableException;
import io.agentnest.spi.BackendSandbox;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.time.Duration;

/**
 * A hijacked {@code POST /containers/{id}/attach} connection: the agent's stdin and stdout. Each
 * attachment has its own HTTP client so that long-lived attachments never exhaust the pool that
 * ordinary API calls use.
 */
final class DockerAttachment implements BackendSandbox {
  private final String id;
  private final DockerHttpClient http;
  private final DockerHttpClient.Response response;
  private final ByteQueueInputStream stdin = new ByteQueueInputStream();
  private final DockerStreamDemux stdout;
  private volatile boolean closed;

  DockerAttachment(URI dockerHost, String id) {
    this.id = id;
    this.http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(dockerHost)
            .maxConnections(1)
            .connectionTimeout(Duration.ofSeconds(10))
            .build();
    DockerHttpClient.Request req =
        DockerHttpClient.Request.builder()
            .method(DockerHttpClient.Request.Method.POST)
            .path("/containers/" + id + "/attach?stream=1&stdin=1&stdout=1&stderr=1")
            .hijackedInput(stdin)
            .build();
    try {
      this.response = http.execute(req);
    } catch (RuntimeException e) {
      closeQuietly();
      throw new BackendUnavailableException(
          "cannot attach to container " + id + ": " + e.getMessage(), e);
    }
    if (response.getStatusCode() != 200 && response.getStatusCode() != 101) {
      int code = response.getStatusCode();
      closeQuietly();
      if (code == 404) {
        throw UnixSocketAttachment.gone(id);
      }
      throw new BackendUnavailableException(
          "Docker refused to attach to container " + id + " (HTTP " + code + ")");
    }
    this.stdout = new DockerStreamDemux(response.getBody());
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public InputStream fromAgent() {
    return stdout;
  }

  @Override
  public OutputStream toAgent() {
    return stdin.writer;
  }

  @Override
  public String diagnostics() {
    return stdout.diagnostics();
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      // End stdin first so docker-java's pump thread finishes on its own; aborting the socket
      // under it makes it die noisily. The socket is released shortly after, off the caller.
      stdin.close();
      Thread closer =
          new Thread(
              () -> {
                try {
                  Thread.sleep(100);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                try {
                  response.close();
                } catch (RuntimeException ignored) {
                  // already gone
                }
                closeQuietly();
              },
              "agentnest-attach-close");
      closer.setDaemon(true);
      closer.start();
    }
  }

  private void closeQuietly() {
    try {
      http.close();
    } catch (IOException | RuntimeException ignored) {
      // nothing to release
    }
  }
}
