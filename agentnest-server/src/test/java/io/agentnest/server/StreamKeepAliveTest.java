package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecEvent;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.OutputChunk;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 42, LOW 11: one keep-alive thread served every stream, and it waited on a stream whose
 * client did not read, so every other tenant's streams lost their keep-alives. Here one client
 * takes a large output and never reads; another stream, idle, must still get its keep-alive. The
 * sandbox is a stand-in producing the events (no engine needed); the server and sockets are real,
 * on 127.0.0.1, and bounded: 1,024 chunks of 64 KiB at most, two sockets, 30 s waits.
 */
class StreamKeepAliveTest {
  final CountDownLatch end = new CountDownLatch(1);

  /** "flood" yields 64 KiB chunks until cancelled (at most 1,024); anything else waits quietly. */
  Execution execution(String command) {
    AtomicBoolean cancelled = new AtomicBoolean();
    boolean flood = command.equals("flood");
    Iterator<ExecEvent> events =
        new Iterator<>() {
          int sent;

          @Override
          public boolean hasNext() {
            if (flood) {
              return !cancelled.get() && sent < 1024;
            }
            try {
              end.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            return false;
          }

          @Override
          public ExecEvent next() {
            sent++;
            return new ExecEvent.Output(
                new OutputChunk(
                    OutputChunk.Stream.STDOUT,
                    "x".repeat(64 * 1024).getBytes(StandardCharsets.US_ASCII)));
          }
        };
    CompletableFuture<ExecResult> result = new CompletableFuture<>();
    return (Execution)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Execution.class},
            (p, m, args) ->
                switch (m.getName()) {
                  case "iterator" -> events;
                  case "result" -> result;
                  case "cancel" -> {
                    cancelled.set(true);
                    yield null;
                  }
                  case "hashCode" -> System.identityHashCode(p);
                  case "equals" -> p == args[0];
                  case "toString" -> "stand-in execution";
                  default -> throw new UnsupportedOperationException(m.getName());
                });
  }

  Sandbox standIn(SandboxConfig config) {
    Instant expires = Instant.now().plus(config.ttl());
    return (Sandbox)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Sandbox.class},
            (p, m, args) ->
                switch (m.getName()) {
                  case "id" -> "stand-in-1";
                  case "config" -> config;
                  case "expiresAt" -> expires;
                  case "start" -> execution((String) args[0]);
                  case "isAlive" -> true;
                  case "close", "destroy", "detach", "extend" -> null;
                  case "hashCode" -> System.identityHashCode(p);
                  case "equals" -> p == args[0];
                  case "toString" -> "stand-in";
                  default -> throw new UnsupportedOperationException(m.getName());
                });
  }

  static void startStream(Socket s, int port, String key, String id, String command)
      throws Exception {
    String body = "{\"command\": \"" + command + "\"}";
    OutputStream out = s.getOutputStream();
    out.write(
        ("POST /v1/sandboxes/"
                + id
                + "/exec HTTP/1.1\r\nHost: 127.0.0.1:"
                + port
                + "\r\nAuthorization: Bearer "
                + key
                + "\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\n"
                + "Content-Length: "
                + body.length()
                + "\r\n\r\n"
                + body)
            .getBytes(StandardCharsets.US_ASCII));
    out.flush();
  }

  @Test
  void aStreamWhoseClientDoesNotReadLeavesOtherStreamsKeepAlives(@TempDir Path dir)
      throws Exception {
    try (TenantStore store = TenantStore.open(dir.resolve("t.db"), Clock.systemUTC());
        AgentNestServer server =
            new AgentNestServer(
                ServerConfig.parse("listen: {host: 127.0.0.1, port: 0}\n", "test"),
                store,
                this::standIn,
                List::of,
                Clock.systemUTC(),
                Map.of())) {
      String key = store.add(new Tenant("t", 4, 4L << 30, 4, 1000, null, null), null);
      int port = server.start();
      Http.Reply made = new Http(port).json("POST", "/v1/sandboxes", key, "{}");
      assertThat(made.status()).as(made.text()).isEqualTo(201);
      String id = made.json().get("id").asText();
      try (Socket stuck = new Socket();
          Socket idle = new Socket()) {
        stuck.setReceiveBufferSize(1024);
        stuck.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
        startStream(stuck, port, key, id, "flood");
        // The flood fills the socket buffers within this time and its writer blocks.
        Thread.sleep(2_000);
        idle.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
        idle.setSoTimeout(30_000);
        startStream(idle, port, key, id, "quiet");
        BufferedReader in =
            new BufferedReader(
                new InputStreamReader(idle.getInputStream(), StandardCharsets.US_ASCII));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(25);
        boolean kept = false;
        for (int lines = 0; lines < 200 && System.nanoTime() < deadline; lines++) {
          String line = in.readLine();
          if (line == null) {
            break;
          }
          if (line.startsWith(": keep-alive")) {
            kept = true;
            break;
          }
        }
        // The keep-alive comes every 5 s; 25 s is generous for this loaded machine.
        assertThat(kept).as("the idle stream got a keep-alive").isTrue();
      } finally {
        end.countDown();
      }
    }
  }
}
