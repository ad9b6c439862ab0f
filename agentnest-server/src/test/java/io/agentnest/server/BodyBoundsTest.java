package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecResult;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxFiles;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.OutputStream;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
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

  /** What the stand-in's workspace holds, by path. */
  final Map<String, byte[]> stored = new ConcurrentHashMap<>();

  /** Reads waiting (bounded) until the test releases them, so that downloads overlap. */
  final CountDownLatch reading = new CountDownLatch(4);

  final CountDownLatch releaseReads = new CountDownLatch(1);

  final AtomicInteger writeCalls = new AtomicInteger();

  /** Whether only the first write is held (the rest go through at once). */
  volatile boolean holdFirstWriteOnly;

  /**
   * A sandbox whose workspace is a map: a write waits (bounded) until the test releases it, a
   * streamed read until four reads are in progress or the test releases them.
   */
  Sandbox standIn(SandboxConfig config) {
    Instant expires = Instant.now().plus(config.ttl());
    SandboxFiles files =
        (SandboxFiles)
            Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {SandboxFiles.class},
                (p, m, args) -> {
                  switch (m.getName()) {
                    case "write" -> {
                      byte[] data =
                          args[1] instanceof InputStream in ? in.readAllBytes() : (byte[]) args[1];
                      writing.countDown();
                      if (!holdFirstWriteOnly || writeCalls.getAndIncrement() == 0) {
                        assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
                      }
                      written.incrementAndGet();
                      stored.put((String) args[0], data);
                      return new FileInfo(
                          (String) args[0], FileInfo.Type.FILE, data.length, 0644, Instant.now());
                    }
                    case "stat" -> {
                      byte[] data = stored.get((String) args[0]);
                      if (data == null) {
                        throw new FileOperationException(
                            FileOperationException.Reason.NOT_FOUND, args[0] + " does not exist");
                      }
                      return new FileInfo(
                          (String) args[0], FileInfo.Type.FILE, data.length, 0644, Instant.now());
                    }
                    case "read" -> {
                      byte[] data = stored.get((String) args[0]);
                      if (args.length == 1) {
                        return data;
                      }
                      reading.countDown();
                      assertThat(
                              reading.await(30, TimeUnit.SECONDS) || releaseReads.getCount() == 0)
                          .isTrue();
                      OutputStream out = (OutputStream) args[1];
                      for (int off = 0; off < data.length; off += 65536) {
                        out.write(data, off, Math.min(65536, data.length - off));
                      }
                      return (long) data.length;
                    }
                    default -> throw new UnsupportedOperationException(m.getName());
                  }
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
                  case "exec" -> {
                    writing.countDown();
                    assertThat(release.await(30, TimeUnit.SECONDS)).isTrue();
                    yield new ExecResult(
                        0,
                        "ok",
                        "",
                        null,
                        List.of(),
                        null,
                        Duration.ZERO,
                        null,
                        false,
                        false,
                        Map.of());
                  }
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

  /** Sends on another thread. */
  CompletableFuture<HttpResponse<String>> sendAsync(
      String method, String path, byte[] body, Map<String, String> h) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return send(method, path, body, h);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
  }

  @Test
  void concurrentExecutionsBeyondTheMemoryBudgetAreRefusedNamingItNotRunOutOfMemory()
      throws Exception {
    String id = created();
    // Each whole result may hold 2 MiB of output until it is written: one fits, not two.
    byte[] exec =
        "{\"command\": \"echo ok\", \"maxOutputBytes\": 2097152}".getBytes(StandardCharsets.UTF_8);
    Map<String, String> h =
        Map.of("Authorization", "Bearer " + key, "Content-Type", "application/json");
    String path = "/v1/sandboxes/" + id + "/exec";
    CompletableFuture<HttpResponse<String>> first = sendAsync("POST", path, exec, h);
    assertThat(writing.await(30, TimeUnit.SECONDS)).as("the first execution is held").isTrue();
    HttpResponse<String> second = send("POST", path, exec, h);
    assertThat(second.statusCode()).as(second.body()).isEqualTo(503);
    assertThat(second.body()).contains("memory budget", "memory_budget");
    assertThat(second.headers().firstValue("Retry-After")).isPresent();
    release.countDown();
    assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    // The first one's reservation ended with it: the next execution fits again.
    assertThat(send("POST", path, exec, h).statusCode()).isEqualTo(200);
  }

  @Test
  void fileBodiesStreamThroughDiskSoTransfersBeyondTheMemoryBudgetAllLand() throws Exception {
    String id = created();
    byte[] content = new byte[(2 << 20) - 1024];
    new Random(1).nextBytes(content);
    Map<String, String> h =
        Map.of("Authorization", "Bearer " + key, "Content-Type", "application/octet-stream");
    String path = "/v1/sandboxes/" + id + "/files/content?path=a.bin";
    // Two uploads of 2 MiB at once against a 3 MiB memory budget: the first is held in the
    // sandbox while the second goes through; neither is held in memory.
    holdFirstWriteOnly = true;
    CompletableFuture<HttpResponse<String>> first = sendAsync("PUT", path, content, h);
    assertThat(writing.await(30, TimeUnit.SECONDS)).as("the first upload is held").isTrue();
    HttpResponse<String> second = send("PUT", path, content, h);
    assertThat(second.statusCode()).as(second.body()).isEqualTo(201);
    release.countDown();
    assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
    assertThat(stored.get("a.bin")).isEqualTo(content);
    // Four downloads of it at once (8 MiB in flight): each one's bytes arrive whole.
    List<CompletableFuture<HttpResponse<byte[]>>> downloads = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      downloads.add(
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return HttpClient.newHttpClient()
                      .send(
                          HttpRequest.newBuilder(URI.create(base + path))
                              .timeout(Duration.ofSeconds(60))
                              .header("Authorization", "Bearer " + key)
                              .build(),
                          HttpResponse.BodyHandlers.ofByteArray());
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              }));
    }
    for (CompletableFuture<HttpResponse<byte[]>> d : downloads) {
      HttpResponse<byte[]> r = d.get(60, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValueAsLong("Content-Length")).hasValue(content.length);
      assertThat(r.body()).isEqualTo(content);
    }
    // A client that accepts gzip (Python's httpx, which the E2B SDK uses, always does) gets the
    // same bytes, whatever coding the server picks: the length header must match what is sent.
    HttpResponse<byte[]> gz =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(base + path))
                    .header("Authorization", "Bearer " + key)
                    .header("Accept-Encoding", "gzip")
                    .build(),
                HttpResponse.BodyHandlers.ofByteArray());
    assertThat(gz.statusCode()).isEqualTo(200);
    byte[] got = gz.body();
    if (gz.headers().firstValue("Content-Encoding").orElse("").equals("gzip")) {
      try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(got))) {
        got = in.readAllBytes();
      }
    }
    assertThat(got).isEqualTo(content);
    // An archive of it, and a download over max_body refused before any byte, naming the bound.
    HttpResponse<byte[]> tar =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create(base + "/v1/sandboxes/" + id + "/archive?path=a.bin"))
                    .header("Authorization", "Bearer " + key)
                    .build(),
                HttpResponse.BodyHandlers.ofByteArray());
    assertThat(tar.statusCode()).isEqualTo(200);
    try (TarArchiveInputStream in =
        new TarArchiveInputStream(new ByteArrayInputStream(tar.body()))) {
      assertThat(in.getNextEntry().getName()).isEqualTo("a.bin");
      assertThat(in.readAllBytes()).isEqualTo(content);
    }
    stored.put("huge.bin", new byte[(2 << 20) + 1]);
    HttpResponse<String> huge =
        send(
            "GET",
            "/v1/sandboxes/" + id + "/files/content?path=huge.bin",
            new byte[0],
            Map.of("Authorization", "Bearer " + key));
    assertThat(huge.statusCode()).as(huge.body()).isEqualTo(413);
    assertThat(huge.body()).contains("huge.bin", "2097152");
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
