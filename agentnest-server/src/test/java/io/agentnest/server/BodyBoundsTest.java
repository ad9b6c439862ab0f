package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.FileInfo;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxFiles;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 42, MEDIUM 6 and LOW 18: bodies and buffers held to server-wide bounds, and bad inputs
 * answered 400/413/503 with what to do, never 500. The server's routes run for real on 127.0.0.1;
 * the sandbox behind them is a stand-in (no engine is needed to reach these bounds): its file
 * writes can be held open, so that requests overlap as a tenant's concurrent uploads do.
 */
class BodyBoundsTest {
  @TempDir Path dir;
  TenantStore store;
  AgentNestServer server;
  String key;
  String base;
  final CountDownLatch release = new CountDownLatch(1);
  final CountDownLatch writing = new CountDownLatch(1);
  final AtomicInteger written = new AtomicInteger();

  @BeforeEach
  void start() {
    store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
    server =
        new AgentNestServer(
            ServerConfig.parse(
                "listen: {host: 127.0.0.1, port: 0}\nmax_body: 2m\nmax_json: 64k\n", "test"),
            store,
            this::standIn,
            List::of,
            Clock.systemUTC(),
            Map.of());
    // Room for one 2 MiB upload at a time, not two.
    server.limits(ServerLimits.defaults().withMemoryBudget(3L << 20));
    key = store.add(new Tenant("t", 4, 4L << 30, 4, 1000, null, null), null);
    base = "http://127.0.0.1:" + server.start();
  }

  @AfterEach
  void stop() {
    release.countDown();
    server.close();
    store.close();
  }

  /** A sandbox that holds files in nothing: a write waits (bounded) until the test releases it. */
  Sandbox standIn(SandboxConfig config) {
    Instant expires = Instant.now().plus(config.ttl());
    SandboxFiles files =
        (SandboxFiles)
            Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {SandboxFiles.class},
                (p, m, args) -> {
                  if (m.getName().equals("write")) {
                    writing.countDown();
                    assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
                    written.incrementAndGet();
                    return new FileInfo(
                        (String) args[0],
                        FileInfo.Type.FILE,
                        ((byte[]) args[1]).length,
                        0644,
                        Instant.now());
                  }
                  throw new UnsupportedOperationException(m.getName());
                });
    return (Sandbox)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Sandbox.class},
            (p, m, args) ->
                switch (m.getName()) {
                  case "id" -> "stand-in-1";
                  case "config" -> config;
                  case "expiresAt" -> expires;
                  case "files" -> files;
                  case "isAlive" -> true;
                  case "close", "destroy", "detach", "extend" -> null;
                  case "hashCode" -> System.identityHashCode(p);
                  case "equals" -> p == args[0];
                  case "toString" -> "stand-in";
                  default -> throw new UnsupportedOperationException(m.getName());
                });
  }

  HttpResponse<String> send(String method, String path, byte[] body, Map<String, String> h)
      throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(base + path))
            .timeout(Duration.ofSeconds(60))
            .method(method, HttpRequest.BodyPublishers.ofByteArray(body));
    h.forEach(b::header);
    // A client per request: the server closes a connection whose body it refused unread, and a
    // reused one would then fail before the next request is sent.
    return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  String created() throws Exception {
    HttpResponse<String> r =
        send(
            "POST",
            "/v1/sandboxes",
            "{}".getBytes(StandardCharsets.UTF_8),
            Map.of("Authorization", "Bearer " + key, "Content-Type", "application/json"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return Http.JSON.readTree(r.body()).get("id").asText();
  }

  @Test
  void concurrentUploadsBeyondTheMemoryBudgetAreRefusedNamingItNotRunOutOfMemory()
      throws Exception {
    String id = created();
    byte[] twoMiB = new byte[(2 << 20) - 1024];
    Map<String, String> h =
        Map.of("Authorization", "Bearer " + key, "Content-Type", "application/octet-stream");
    String path = "/v1/sandboxes/" + id + "/files/content?path=a.bin";
    CompletableFuture<HttpResponse<String>> first =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return send("PUT", path, twoMiB, h);
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
    assertThat(writing.await(30, TimeUnit.SECONDS)).as("the first upload is held").isTrue();
    HttpResponse<String> second = send("PUT", path, twoMiB, h);
    assertThat(second.statusCode()).as(second.body()).isEqualTo(503);
    assertThat(second.body()).contains("memory budget", "memory_budget");
    assertThat(second.headers().firstValue("Retry-After")).isPresent();
    release.countDown();
    assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
    // The first one's reservation ended with it: the next upload fits again.
    assertThat(send("PUT", path, twoMiB, h).statusCode()).isEqualTo(201);
  }

  @Test
  void anExtendByAHugeDurationIsA400NamingTheBound() throws Exception {
    String id = created();
    HttpResponse<String> r =
        send(
            "POST",
            "/v1/sandboxes/" + id + "/extend",
            "{\"seconds\": 9223372036854775807}".getBytes(StandardCharsets.UTF_8),
            Map.of("Authorization", "Bearer " + key, "Content-Type", "application/json"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(r.body()).contains("seconds must be in 1..", "max_ttl");
  }

  /** Creates a sandbox through E2B's API: its id and envd access token. */
  String[] e2bSandbox() throws Exception {
    HttpResponse<String> r =
        send(
            "POST",
            "/e2b/sandboxes",
            "{\"templateID\": \"base\"}".getBytes(StandardCharsets.UTF_8),
            Map.of("X-API-KEY", key, "Content-Type", "application/json"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    var j = Http.JSON.readTree(r.body());
    return new String[] {j.get("sandboxID").asText(), j.get("envdAccessToken").asText()};
  }

  static byte[] multipart(String boundary, String fileName, byte[] content) {
    byte[] head =
        ("--"
                + boundary
                + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
                + fileName
                + "\"\r\nContent-Type: application/octet-stream\r\n\r\n")
            .getBytes(StandardCharsets.UTF_8);
    byte[] tail = ("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8);
    byte[] all = new byte[head.length + content.length + tail.length];
    System.arraycopy(head, 0, all, 0, head.length);
    System.arraycopy(content, 0, all, head.length, content.length);
    System.arraycopy(tail, 0, all, head.length + content.length, tail.length);
    return all;
  }

  Map<String, String> envd(String[] sb, String boundary) {
    return Map.of(
        "E2b-Sandbox-Id",
        sb[0],
        "E2b-Sandbox-Port",
        "49983",
        "X-Access-Token",
        sb[1],
        "Content-Type",
        "multipart/form-data; boundary=" + boundary);
  }

  @Test
  void anOversizedMultipartUploadIsRefusedNamingMaxBodyAndNotStored() throws Exception {
    String[] sb = e2bSandbox();
    release.countDown();
    byte[] body = multipart("b0undary", "big.bin", new byte[(2 << 20) + (512 << 10)]);
    HttpResponse<String> r =
        send("POST", "/e2b/sandbox/files?path=/home/user/big.bin", body, envd(sb, "b0undary"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(413);
    assertThat(r.body()).contains("max_body");
    assertThat(written.get()).as("nothing reached the sandbox").isZero();
    // Within the bound the same upload goes through.
    byte[] small = multipart("b0undary", "small.bin", new byte[1024]);
    HttpResponse<String> ok =
        send("POST", "/e2b/sandbox/files?path=/home/user/small.bin", small, envd(sb, "b0undary"));
    assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    assertThat(written.get()).isEqualTo(1);
  }

  @Test
  void aNulInAMultipartFileNameIsA400() throws Exception {
    String[] sb = e2bSandbox();
    release.countDown();
    byte[] body = multipart("b0undary", "a\u0000b.txt", "x".getBytes(StandardCharsets.UTF_8));
    HttpResponse<String> r = send("POST", "/e2b/sandbox/files", body, envd(sb, "b0undary"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(r.body()).contains("multipart", "printable");
    assertThat(written.get()).isZero();
    // The same name given as the path (the SDK's usual form) is refused by the path check.
    byte[] plain = multipart("b0undary", "a.txt", "x".getBytes(StandardCharsets.UTF_8));
    HttpResponse<String> q =
        send("POST", "/e2b/sandbox/files?path=a%00b.txt", plain, envd(sb, "b0undary"));
    assertThat(q.statusCode()).as(q.body()).isEqualTo(400);
    assertThat(q.body()).contains("control character");
    assertThat(written.get()).isZero();
  }

  @Test
  void anUnknownIdAndAWrongTokenGetTheSameAnswerBeforeAuthentication() throws Exception {
    String[] sb = e2bSandbox();
    Map<String, String> wrong =
        Map.of("E2b-Sandbox-Id", sb[0], "E2b-Sandbox-Port", "49983", "X-Access-Token", "guess");
    Map<String, String> unknown =
        Map.of("E2b-Sandbox-Id", "nope", "E2b-Sandbox-Port", "49983", "X-Access-Token", "guess");
    HttpResponse<String> a = send("GET", "/e2b/sandbox/files?path=x", new byte[0], wrong);
    HttpResponse<String> b = send("GET", "/e2b/sandbox/files?path=x", new byte[0], unknown);
    assertThat(a.statusCode()).isEqualTo(401).isEqualTo(b.statusCode());
    assertThat(a.body().replace(sb[0], "ID")).isEqualTo(b.body().replace("nope", "ID"));
  }
}
