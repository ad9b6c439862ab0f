package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.spi.Backends;
import io.agentnest.spi.Labels;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Density on the real engine: open sandboxes hold no host thread each (their channels are read by
 * the one reactor thread) and still answer; listing sandboxes is one engine request, however many
 * there are.
 */
@ExtendWith(DockerEngineRequired.class)
class DensityIT {
  static final int SANDBOXES = 8;

  @TempDir static Path home;
  static TestHome isolated;
  static final List<Sandbox> sandboxes = new ArrayList<>();

  @BeforeAll
  static void start() {
    isolated = TestHome.use(home);
    for (int i = 0; i < SANDBOXES; i++) {
      sandboxes.add(
          Sandbox.create(
              SandboxConfig.builder().runtime("runc").label("test", "density-it").build()));
    }
  }

  @AfterAll
  static void stop() {
    sandboxes.forEach(Sandbox::close);
    isolated.close();
  }

  static List<String> threadNames(String prefix) {
    return Thread.getAllStackTraces().keySet().stream()
        .map(Thread::getName)
        .filter(n -> n.startsWith(prefix))
        .toList();
  }

  /**
   * Per-sandbox reader threads ({@code agentnest-channel-<id>}); the shared pool that fails a dead
   * channel's calls ({@code agentnest-channel-death}) is not one, and may still idle from a sandbox
   * an earlier test in this JVM killed.
   */
  static List<String> readerThreads() {
    return threadNames("agentnest-channel-").stream()
        .filter(n -> !n.startsWith("agentnest-channel-death"))
        .toList();
  }

  @Test
  void openSandboxesHoldNoChannelThreadAndAllAnswer() {
    assertThat(readerThreads()).isEmpty();
    assertThat(threadNames("agentnest-reactor")).hasSize(1);
    for (Sandbox sb : sandboxes) {
      assertThat(sb.runCode("x = 1\nx + 1").result()).isEqualTo("2");
      assertThat(sb.exec("echo hi").stdout()).isEqualTo("hi\n");
    }
    assertThat(readerThreads()).isEmpty();
  }

  @Test
  void largeOutputAndStderrCrossTheReactorIntact() {
    Sandbox sb = sandboxes.get(0);
    String out = sb.exec("head -c 300000 /dev/zero | tr '\\000' x; echo oops >&2").stdout();
    assertThat(out).hasSize(300000).matches("x+");
    assertThat(sb.runCode("print('y' * 200000)").output()).hasSize(200001);
    // Stdin faster than the agent reads it: writes wait for room on the non-blocking socket.
    byte[] data = new byte[6 << 20];
    new Random(7).nextBytes(data);
    sb.files().write("big.bin", data);
    assertThat(sb.files().read("big.bin")).isEqualTo(data);
  }

  @Test
  void listIsOneEngineRequestAndKnowsEachRuntime() throws Exception {
    Path sock = home.resolve("counting.sock");
    AtomicInteger requests = new AtomicInteger();
    try (CountingProxy proxy = new CountingProxy(sock, Path.of("/var/run/docker.sock"), requests)) {
      String before = System.getProperty("DOCKER_HOST");
      System.setProperty("DOCKER_HOST", "unix://" + sock);
      List<SandboxInfo> listed;
      try {
        DockerEngine engine = DockerEngine.connect();
        requests.set(0);
        listed = engine.listManaged();
      } finally {
        if (before == null) {
          System.clearProperty("DOCKER_HOST");
        } else {
          System.setProperty("DOCKER_HOST", before);
        }
      }
      assertThat(requests.get()).isEqualTo(1);
      List<String> ours = sandboxes.stream().map(Sandbox::id).toList();
      List<SandboxInfo> mine = listed.stream().filter(i -> ours.contains(i.id())).toList();
      assertThat(mine).hasSize(SANDBOXES);
      assertThat(mine).allSatisfy(i -> assertThat(i.runtime()).isEqualTo("runc"));
      assertThat(mine)
          .allSatisfy(i -> assertThat(i.labels()).containsEntry(Labels.RUNTIME, "runc"));
    }
    // The backend's list, as Sandbox.list() and 'agentnest ls' use it, agrees.
    assertThat(Backends.get("docker").list().stream().map(SandboxInfo::id))
        .containsAll(sandboxes.stream().map(Sandbox::id).toList());
  }

  /**
   * A Unix-socket proxy in front of the engine that counts HTTP requests (request lines end in
   * {@code HTTP/1.1}); bounded: it serves until closed.
   */
  static final class CountingProxy implements AutoCloseable {
    private static final byte[] MARK = " HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII);
    private final ServerSocketChannel server;
    private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    CountingProxy(Path sock, Path engine, AtomicInteger requests) throws IOException {
      server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      server.bind(UnixDomainSocketAddress.of(sock));
      acceptor =
          new Thread(
              () -> {
                while (server.isOpen()) {
                  try {
                    SocketChannel client = server.accept();
                    SocketChannel up = SocketChannel.open(UnixDomainSocketAddress.of(engine));
                    open.add(client);
                    open.add(up);
                    pump(client, up, requests);
                    pump(up, client, null);
                  } catch (IOException e) {
                    return;
                  }
                }
              },
              "density-it-proxy");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    private static void pump(SocketChannel from, SocketChannel to, @Nullable AtomicInteger count) {
      Thread t =
          new Thread(
              () -> {
                ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
                int matched = 0;
                try {
                  while (from.read(buf) >= 0) {
                    buf.flip();
                    if (count != null) {
                      for (int i = buf.position(); i < buf.limit(); i++) {
                        matched =
                            buf.get(i) == MARK[matched]
                                ? matched + 1
                                : buf.get(i) == MARK[0] ? 1 : 0;
                        if (matched == MARK.length) {
                          count.incrementAndGet();
                          matched = 0;
                        }
                      }
                    }
                    while (buf.hasRemaining()) {
                      to.write(buf);
                    }
                    buf.clear();
                  }
                } catch (IOException e) {
                  // connection closed
                } finally {
                  try {
                    to.shutdownOutput();
                  } catch (IOException ignored) {
                    // already closed
                  }
                }
              },
              "density-it-pump");
      t.setDaemon(true);
      t.start();
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (SocketChannel c : open) {
        c.close();
      }
    }
  }
}
