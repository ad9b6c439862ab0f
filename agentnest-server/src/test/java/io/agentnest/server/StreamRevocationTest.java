package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.server.e2b.E2bEnvd;
import io.agentnest.server.http.OpenStreams;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.Tenant;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Revocation cuts streams already open (issue 42, item 5): an execution streamed over a WebSocket
 * or as server-sent events, opened with a key that `agentnest tenant revoke` then revokes, stops
 * and its connection ends, where before it ran on for as long as the execution did. The fake
 * sandbox's executions run until cancelled.
 */
class StreamRevocationTest {
  @TempDir Path dir;
  FakeSandboxes running;
  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeEach
  void start() {
    running = new FakeSandboxes(dir, "");
  }

  @AfterEach
  void stop() {
    running.close();
  }

  @Test
  void aWebSocketExecutionIsCutWhenItsKeyIsRevoked() throws Exception {
    String key = running.store.add(new Tenant("alpha", 5, 4L << 30, 4, 100, null, null), null);
    String other = running.store.issueKey("alpha", null);
    String id = running.http().created(key, "{}");
    List<String> messages = new CopyOnWriteArrayList<>();
    CompletableFuture<Integer> closed = new CompletableFuture<>();
    WebSocket ws =
        client
            .newWebSocketBuilder()
            .header("Authorization", "Bearer " + key)
            .buildAsync(
                URI.create("ws://127.0.0.1:" + running.port + "/v1/sandboxes/" + id + "/stream"),
                new WebSocket.Listener() {
                  @Override
                  public CompletionStage<?> onText(WebSocket s, CharSequence data, boolean last) {
                    messages.add(data.toString());
                    s.request(1);
                    return null;
                  }

                  @Override
                  public CompletionStage<?> onClose(WebSocket s, int status, String reason) {
                    closed.complete(status);
                    return null;
                  }

                  @Override
                  public void onError(WebSocket s, Throwable error) {
                    closed.completeExceptionally(error);
                  }
                })
            .get(30, TimeUnit.SECONDS);
    ws.sendText("{\"type\": \"exec\", \"request\": {\"command\": \"sleep 600\"}}", true)
        .get(30, TimeUnit.SECONDS);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> messages.stream().anyMatch(m -> m.contains("started")));
    assertThat(closed).isNotDone();

    // Another key of the tenant is revoked: nothing happens to this stream.
    assertThat(running.store.revoke(other)).isTrue();
    Thread.sleep(3 * OpenStreams.CHECK_MILLIS);
    assertThat(closed).isNotDone();
    assertThat(running.cancelled).hasValue(0);

    assertThat(running.store.revoke(key)).isTrue();
    assertThat(closed.get(10, TimeUnit.SECONDS)).isEqualTo(1008);
    await().atMost(Duration.ofSeconds(10)).until(() -> running.cancelled.get() == 1);
  }

  @Test
  void aServerSentExecutionIsCutWhenItsKeyIsRevokedAndSaysWhy() throws Exception {
    String key = running.store.add(new Tenant("alpha", 5, 4L << 30, 4, 100, null, null), null);
    String id = running.http().created(key, "{}");
    HttpResponse<InputStream> r =
        client.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://127.0.0.1:" + running.port + "/v1/sandboxes/" + id + "/exec"))
                .timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + key)
                .header("Accept", "text/event-stream")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"sleep 600\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    List<String> lines = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> ended =
        CompletableFuture.runAsync(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                  lines.add(line);
                }
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> lines.stream().anyMatch(l -> l.equals("event: started")));
    assertThat(ended).isNotDone();

    assertThat(running.store.revoke(key)).isTrue();
    ended.get(10, TimeUnit.SECONDS);
    assertThat(running.cancelled).hasValue(1);
    assertThat(lines).contains("event: error");
    assertThat(String.join("\n", lines)).contains("key_revoked");
  }

  @Test
  void anE2bProcessStreamIsEndedWhenTheKeyThatReceivedItsTokenIsRevoked() throws Exception {
    String key = running.store.add(new Tenant("alpha", 5, 4L << 30, 4, 100, null, null), null);
    HttpResponse<String> made =
        client.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + running.port + "/e2b/sandboxes"))
                .timeout(Duration.ofSeconds(30))
                .header("X-API-KEY", key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\": \"base\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
    JsonNode sb = Wire.JSON.readTree(made.body());
    byte[] msg =
        "{\"process\":{\"cmd\":\"sleep\",\"args\":[\"600\"]}}".getBytes(StandardCharsets.UTF_8);
    byte[] envelope =
        ByteBuffer.allocate(5 + msg.length).put((byte) 0).putInt(msg.length).put(msg).array();
    HttpResponse<InputStream> r =
        client.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://127.0.0.1:" + running.port + "/e2b/sandbox/process.Process/Start"))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/connect+json")
                .header("E2b-Sandbox-Id", sb.get("sandboxID").asText())
                .header("E2b-Sandbox-Port", Integer.toString(E2bEnvd.ENVD_PORT))
                .header("X-Access-Token", sb.get("envdAccessToken").asText())
                .POST(HttpRequest.BodyPublishers.ofByteArray(envelope))
                .build(),
            HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    CompletableFuture<Void> ended =
        CompletableFuture.runAsync(
            () -> {
              try (InputStream in = r.body()) {
                byte[] buf = new byte[4096];
                for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                  synchronized (body) {
                    body.write(buf, 0, n);
                  }
                }
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              synchronized (body) {
                return body.toString(StandardCharsets.UTF_8).contains("start");
              }
            });
    Thread.sleep(2 * OpenStreams.CHECK_MILLIS);
    assertThat(ended).isNotDone();

    assertThat(running.store.revoke(key)).isTrue();
    ended.get(10, TimeUnit.SECONDS);
    String all;
    synchronized (body) {
      all = body.toString(StandardCharsets.UTF_8);
    }
    assertThat(all).contains("unauthenticated").contains("revoked");
    // As when an E2B client goes away, the command itself runs on until killed or timed out.
    assertThat(running.cancelled).hasValue(0);
  }
}
