package io.agentnest.internal.channel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.SandboxClosedException;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SelectableAgentStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.Pipe;
import java.nio.channels.Pipe.SinkChannel;
import java.nio.channels.Pipe.SourceChannel;
import java.nio.channels.SelectableChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 20, unit = TimeUnit.SECONDS)
class AgentChannelTest {
  private static final Duration WAIT = Duration.ofSeconds(5);

  FakeSandbox sandbox;
  AgentChannel channel;

  /** Whether the fake connection is read by the shared reactor instead of a thread. */
  boolean selectable() {
    return false;
  }

  @BeforeEach
  void open() throws IOException {
    sandbox = new FakeSandbox(selectable());
    channel = new AgentChannel(sandbox);
  }

  @AfterEach
  void close() {
    channel.close();
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static ObjectNode ev(String ev, long id) {
    return Json.object().put(Ops.EV, ev).put("id", id);
  }

  @Test
  void callGetsItsOutFramesAndFinalResult() throws IOException {
    List<Frame> events = new CopyOnWriteArrayList<>();
    CompletableFuture<Frame> done =
        channel.call(
            Json.object().put(Ops.OP, Ops.OP_EXEC).put("cmd", "echo hi"),
            utf8("stdin"),
            events::add);

    Frame req = sandbox.nextRequest();
    assertThat(req.header().path(Ops.OP).asText()).isEqualTo(Ops.OP_EXEC);
    assertThat(req.header().path("cmd").asText()).isEqualTo("echo hi");
    assertThat(text(req.payload())).isEqualTo("stdin");
    long id = req.id();
    assertThat(id).isPositive();

    sandbox.reply(ev("out", id).put("s", "o"), utf8("hi\n"));
    sandbox.reply(ev("out", id).put("s", "e"), utf8("warn\n"));
    sandbox.reply(ev("res", id).put("exit_code", 0), new byte[0]);

    Frame res = channel.await(done, WAIT, "exec");
    assertThat(res.ev()).isEqualTo(Ops.EV_RESULT);
    assertThat(res.header().path("exit_code").asInt(-1)).isZero();
    assertThat(events).extracting(f -> text(f.payload())).containsExactly("hi\n", "warn\n");
    assertThat(events).extracting(f -> f.header().path("s").asText()).containsExactly("o", "e");
    assertThat(channel.isAlive()).isTrue();
  }

  @Test
  void closingWithAReasonFailsPendingAndLaterCallsWithThatReason() {
    CompletableFuture<Frame> pending =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});

    channel.close("destroyed: over budget");

    assertThatThrownBy(() -> channel.await(pending, WAIT, "exec"))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("destroyed: over budget");
    assertThatThrownBy(
            () -> channel.call(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0], f -> {}))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("destroyed: over budget");
  }

  @Test
  void errFrameAlsoEndsACall() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, "read"), new byte[0], f -> {});
    long id = sandbox.nextRequest().id();
    sandbox.reply(ev("err", id).put("code", "NOT_FOUND"), new byte[0]);

    Frame f = channel.await(done, WAIT, "read");
    assertThat(f.ev()).isEqualTo(Ops.EV_ERROR);
    assertThat(f.header().path("code").asText()).isEqualTo("NOT_FOUND");
  }

  @Test
  void corkedFramesFromAnyThreadLeaveInOrderInOneWrite() throws Exception {
    channel.cork();
    channel.send(Json.object().put(Ops.OP, Ops.OP_INIT), utf8("{}"));
    CompletableFuture<Frame> hello =
        channel.call(Json.object().put(Ops.OP, Ops.OP_HELLO), new byte[0], f -> {});
    Thread other =
        new Thread(() -> channel.send(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0]));
    other.start();
    other.join(5_000);
    assertThat(sandbox.writes.get()).as("nothing written while corked").isZero();

    channel.uncork();
    assertThat(sandbox.writes.get()).isEqualTo(1);
    assertThat(sandbox.nextRequest().header().path(Ops.OP).asText()).isEqualTo(Ops.OP_INIT);
    Frame h = sandbox.nextRequest();
    assertThat(h.header().path(Ops.OP).asText()).isEqualTo(Ops.OP_HELLO);
    assertThat(sandbox.nextRequest().header().path(Ops.OP).asText()).isEqualTo(Ops.OP_PING);
    sandbox.reply(ev("res", h.id()), new byte[0]);
    assertThat(hello.get(5, TimeUnit.SECONDS).id()).isEqualTo(h.id());

    channel.send(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0]);
    assertThat(sandbox.writes.get()).as("uncorked: each send writes").isEqualTo(2);
  }

  @Test
  void uncorkWithNothingHeldWritesNothing() {
    channel.cork();
    channel.uncork();
    channel.uncork();
    assertThat(sandbox.writes.get()).isZero();
  }

  @Test
  void requestRoundTrip() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      Future<Frame> answer =
          pool.submit(
              () -> channel.request(Json.object().put(Ops.OP, Ops.OP_HELLO), new byte[0], WAIT));
      Frame req = sandbox.nextRequest();
      assertThat(req.header().path(Ops.OP).asText()).isEqualTo(Ops.OP_HELLO);
      sandbox.reply(ev("res", req.id()).put("version", "x"), new byte[0]);
      assertThat(answer.get(5, TimeUnit.SECONDS).header().path("version").asText()).isEqualTo("x");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void concurrentCallsAreDemultiplexedById() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Map<String, List<String>> events = new HashMap<>();
      Map<String, Future<Frame>> results = new HashMap<>();
      for (String name : List.of("a", "b")) {
        List<String> seen = new CopyOnWriteArrayList<>();
        events.put(name, seen);
        results.put(
            name,
            pool.submit(
                () -> {
                  CompletableFuture<Frame> done =
                      channel.call(
                          Json.object().put(Ops.OP, Ops.OP_EXEC).put("name", name),
                          new byte[0],
                          f -> seen.add(text(f.payload())));
                  return channel.await(done, WAIT, name);
                }));
      }

      Map<String, Long> ids = new HashMap<>();
      for (int i = 0; i < 2; i++) {
        Frame req = sandbox.nextRequest();
        ids.put(req.header().path("name").asText(), req.id());
      }
      assertThat(ids).containsOnlyKeys("a", "b");
      long a = ids.get("a");
      long b = ids.get("b");
      assertThat(a).isNotEqualTo(b);

      sandbox.reply(ev("out", b), utf8("b1"));
      sandbox.reply(ev("out", a), utf8("a1"));
      sandbox.reply(ev("out", b), utf8("b2"));
      sandbox.reply(ev("res", b).put("who", "b"), new byte[0]);
      sandbox.reply(ev("out", a), utf8("a2"));
      sandbox.reply(ev("out", a), utf8("a3"));
      sandbox.reply(ev("res", a).put("who", "a"), new byte[0]);

      assertThat(results.get("a").get(5, TimeUnit.SECONDS).header().path("who").asText())
          .isEqualTo("a");
      assertThat(results.get("b").get(5, TimeUnit.SECONDS).header().path("who").asText())
          .isEqualTo("b");
      assertThat(events.get("a")).containsExactly("a1", "a2", "a3");
      assertThat(events.get("b")).containsExactly("b1", "b2");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void idsAreUniqueAndIncreasing() {
    long first = channel.newId();
    long second = channel.newId();
    assertThat(second).isGreaterThan(first);
  }

  @Test
  void framesForUnknownCallsAreDroppedAndTheChannelStaysUsable() throws IOException {
    sandbox.reply(ev("out", 9999), utf8("stray"));
    sandbox.reply(ev("res", 9998), new byte[0]);
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, "x"), new byte[0], f -> {});
    long id = sandbox.nextRequest().id();
    sandbox.reply(ev("res", id), new byte[0]);
    assertThat(channel.await(done, WAIT, "x").id()).isEqualTo(id);
    assertThat(channel.isAlive()).isTrue();
  }

  @Test
  void failingListenerDoesNotBreakTheChannel() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(
            Json.object().put(Ops.OP, Ops.OP_EXEC),
            new byte[0],
            f -> {
              throw new IllegalStateException("listener bug");
            });
    long id = sandbox.nextRequest().id();
    sandbox.reply(ev("out", id), utf8("x"));
    sandbox.reply(ev("res", id), new byte[0]);
    assertThat(channel.await(done, WAIT, "exec").ev()).isEqualTo(Ops.EV_RESULT);
    assertThat(channel.isAlive()).isTrue();
  }

  @Test
  void readyFrameIsAwaited() throws IOException {
    channel.sendRaw(utf8("bootstrap-bytes"));
    assertThat(text(sandbox.readRaw(15))).isEqualTo("bootstrap-bytes");
    sandbox.reply(Json.object().put(Ops.EV, Ops.EV_READY).put("agent", "0.1"), new byte[0]);
    assertThat(channel.awaitReady(WAIT).header().path("agent").asText()).isEqualTo("0.1");
  }

  @Test
  void agentExitFailsPendingCallsPromptly() throws IOException {
    sandbox.diagnostics = "Traceback: boom\n";
    CompletableFuture<Frame> first =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    CompletableFuture<Frame> second =
        channel.call(Json.object().put(Ops.OP, Ops.OP_PY), new byte[0], f -> {});
    sandbox.nextRequest();
    sandbox.nextRequest();

    long start = System.nanoTime();
    sandbox.agentExits();

    for (CompletableFuture<Frame> done : List.of(first, second)) {
      assertThatThrownBy(() -> channel.await(done, WAIT, "exec"))
          .isExactlyInstanceOf(SandboxClosedException.class)
          .hasMessageContaining("exited")
          .hasMessageContaining("last words: Traceback: boom");
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
    assertThat(channel.isAlive()).isFalse();
    assertThat(channel.deathReason()).contains("exited");
  }

  @Test
  void anExpiredFrameFromTheSandboxIsNotTakenAsExpiry() throws Exception {
    // Code in the sandbox that reaches the channel could send this at any time.
    sandbox.reply(Json.object().put(Ops.EV, Ops.EV_EXPIRED).put("expires_at", 0), new byte[0]);
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_PING), new byte[0], f -> {});
    sandbox.reply(ev("res", sandbox.nextRequest().id()), new byte[0]);
    assertThat(channel.await(done, WAIT, "ping").ev()).isEqualTo(Ops.EV_RESULT);
    assertThat(channel.expired()).isFalse();
    assertThat(channel.isAlive()).isTrue();

    sandbox.agentExits();
    waitUntilDead();
    assertThat(channel.expired()).isFalse();
    assertThat(channel.deathReason()).contains("exited").doesNotContain("expired");
  }

  @Test
  void afterDeathNewCallsFailImmediately() throws Exception {
    sandbox.agentExits();
    waitUntilDead();

    assertThatThrownBy(
            () -> channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {}))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("exited");
    CompletableFuture<Frame> registered = channel.register(channel.newId(), f -> {});
    assertThat(registered).isCompletedExceptionally();
    assertThatThrownBy(() -> channel.awaitReady(WAIT))
        .isExactlyInstanceOf(SandboxClosedException.class);
  }

  @Test
  void agentExitBeforeReadyFailsAwaitReady() {
    sandbox.agentExits();
    assertThatThrownBy(() -> channel.awaitReady(WAIT))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("exited");
  }

  @Test
  void garbageBytesAreAProtocolViolation() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    sandbox.nextRequest();

    sandbox.replyRaw(utf8("Hello, I am not a frame\n"));

    assertThatThrownBy(() -> channel.await(done, WAIT, "exec"))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("protocol violation")
        .hasMessageContaining("magic");
    assertThat(channel.isAlive()).isFalse();
  }

  @Test
  void nonObjectHeaderIsAProtocolViolation() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    long id = sandbox.nextRequest().id();
    sandbox.reply(ev("out", id), utf8("fine"));
    byte[] header = utf8("[1,2]");
    byte[] frame = new byte[10 + header.length];
    ByteBuffer.wrap(frame)
        .put(FrameCodec.MAGIC0)
        .put(FrameCodec.MAGIC1)
        .putInt(header.length)
        .putInt(0)
        .put(header);
    sandbox.replyRaw(frame);

    assertThatThrownBy(() -> channel.await(done, WAIT, "exec"))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("protocol violation");
  }

  @Test
  void truncatedFrameLosesTheChannel() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    long id = sandbox.nextRequest().id();
    byte[] frame = FrameCodec.encode(ev("res", id), new byte[0]);
    sandbox.replyRaw(Arrays.copyOf(frame, frame.length - 3));
    sandbox.agentExits();

    assertThatThrownBy(() -> channel.await(done, WAIT, "exec"))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("lost the sandbox channel");
  }

  @Test
  void anErrorInTheReaderFailsEveryPendingCallAtOnce() throws IOException {
    // The listener of call A runs on the reader thread; an Error there (as OutOfMemoryError would
    // be while handling a frame) used to end the reader silently, so call B hung until its
    // deadline.
    CompletableFuture<Frame> a =
        channel.call(
            Json.object().put(Ops.OP, Ops.OP_EXEC),
            new byte[0],
            f -> {
              throw new OutOfMemoryError("simulated: heap exhausted while handling a frame");
            });
    long idA = sandbox.nextRequest().id();
    CompletableFuture<Frame> b =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    sandbox.nextRequest();

    sandbox.reply(ev("out", idA), utf8("x"));

    // Far below B's own deadline (an hour): only the reader's death can end it.
    assertThatThrownBy(() -> channel.await(b, Duration.ofHours(1), "exec"))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("channel reader failed")
        .hasMessageContaining("OutOfMemoryError");
    // A fails too; on the reactor the death reaches each pending call from the dispatch thread,
    // so A is awaited (seconds, not its hour) rather than checked at the instant B failed.
    assertThatThrownBy(() -> channel.await(a, Duration.ofSeconds(10), "exec"))
        .isExactlyInstanceOf(SandboxClosedException.class);
    assertThat(channel.isAlive()).isFalse();
    assertThatThrownBy(() -> channel.call(Json.object().put(Ops.OP, "x"), new byte[0], f -> {}))
        .isInstanceOf(SandboxClosedException.class);
  }

  @Test
  void unansweredCallTimesOut() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    sandbox.nextRequest();

    long start = System.nanoTime();
    assertThatThrownBy(() -> channel.await(done, Duration.ofMillis(200), "exec"))
        .isExactlyInstanceOf(AgentNestException.class)
        .hasMessageContaining("did not answer 'exec' within 200 ms");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(WAIT);
    assertThat(channel.isAlive()).as("a slow call does not kill the channel").isTrue();
  }

  @Test
  void unansweredRequestNamesItsOperation() {
    assertThatThrownBy(
            () ->
                channel.request(
                    Json.object().put(Ops.OP, "stat"), new byte[0], Duration.ofMillis(100)))
        .isExactlyInstanceOf(AgentNestException.class)
        .hasMessageContaining("did not answer 'stat'");
  }

  @Test
  void abandonedCallIgnoresItsLateAnswer() throws IOException {
    List<Frame> events = new CopyOnWriteArrayList<>();
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], events::add);
    long id = sandbox.nextRequest().id();
    channel.abandon(id);
    sandbox.reply(ev("out", id), utf8("late"));
    sandbox.reply(ev("res", id), new byte[0]);

    // A later call still works, so the late frames have been consumed and dropped.
    CompletableFuture<Frame> next =
        channel.call(Json.object().put(Ops.OP, "x"), new byte[0], f -> {});
    long nextId = sandbox.nextRequest().id();
    sandbox.reply(ev("res", nextId), new byte[0]);
    channel.await(next, WAIT, "x");

    assertThat(done).isNotDone();
    assertThat(events).isEmpty();
  }

  @Test
  void closeFailsPendingCallsAndClosesTheConnection() throws IOException {
    CompletableFuture<Frame> done =
        channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {});
    sandbox.nextRequest();

    channel.close();

    assertThat(sandbox.closed).isTrue();
    assertThatThrownBy(() -> channel.await(done, WAIT, "exec"))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("channel was closed");
    assertThat(channel.isAlive()).isFalse();
    channel.close(); // idempotent
  }

  @Test
  void writeFailureKillsTheChannel() {
    sandbox.toAgentBroken = true;
    assertThatThrownBy(
            () -> channel.call(Json.object().put(Ops.OP, Ops.OP_EXEC), new byte[0], f -> {}))
        .isExactlyInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("cannot write to the sandbox agent");
    assertThat(channel.isAlive()).isFalse();
  }

  private void waitUntilDead() throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (channel.isAlive() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(channel.isAlive()).isFalse();
  }

  /** An in-memory, unbounded byte pipe; reads block until data, close, or the read timeout. */
  private static final class MemoryPipe {
    private final long readTimeoutMs;
    private final ArrayDeque<byte[]> chunks = new ArrayDeque<>();
    private int pos;
    private boolean closed;

    MemoryPipe(long readTimeoutMs) {
      this.readTimeoutMs = readTimeoutMs;
    }

    synchronized void write(byte[] b, int off, int len) throws IOException {
      if (closed) {
        throw new IOException("pipe closed");
      }
      if (len > 0) {
        chunks.add(Arrays.copyOfRange(b, off, off + len));
        notifyAll();
      }
    }

    synchronized int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(readTimeoutMs);
      while (chunks.isEmpty()) {
        if (closed) {
          return -1;
        }
        long waitMs = 0;
        if (readTimeoutMs > 0) {
          waitMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
          if (waitMs <= 0) {
            throw new InterruptedIOException("nothing to read within " + readTimeoutMs + " ms");
          }
        }
        try {
          wait(waitMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("interrupted");
        }
      }
      byte[] c = chunks.peek();
      int n = Math.min(len, c.length - pos);
      System.arraycopy(c, pos, b, off, n);
      pos += n;
      if (pos == c.length) {
        chunks.poll();
        pos = 0;
      }
      return n;
    }

    synchronized void close() {
      closed = true;
      notifyAll();
    }

    InputStream input() {
      return new InputStream() {
        @Override
        public int read() throws IOException {
          byte[] one = new byte[1];
          int n = MemoryPipe.this.read(one, 0, 1);
          return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
          return MemoryPipe.this.read(b, off, len);
        }
      };
    }

    OutputStream output() {
      return new OutputStream() {
        @Override
        public void write(int b) throws IOException {
          MemoryPipe.this.write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          MemoryPipe.this.write(b, off, len);
        }
      };
    }
  }

  /** A sandbox whose "agent" is driven by the test through two in-memory pipes. */
  static final class FakeSandbox implements BackendSandbox {
    private final MemoryPipe agentStdout = new MemoryPipe(0);
    private final MemoryPipe agentStdin = new MemoryPipe(WAIT.toMillis());
    private final InputStream fromAgent = agentStdout.input();
    private final OutputStream agentWrites;
    // Selectable mode: the agent's stdout is an NIO pipe that the reactor watches.
    private final @Nullable SourceChannel selectableOut;
    private final @Nullable SinkChannel selectableIn;
    private final InputStream agentReads = agentStdin.input();
    private final OutputStream toAgent = agentStdin.output();
    volatile String diagnostics = "";
    volatile boolean closed;
    volatile boolean toAgentBroken;
    // Thrown by the selectable stream's next read: an Error while handling this sandbox's bytes.
    volatile @Nullable Error readError;
    final AtomicInteger writes = new AtomicInteger();

    FakeSandbox(boolean selectable) throws IOException {
      if (selectable) {
        Pipe p = Pipe.open();
        p.source().configureBlocking(false);
        selectableOut = p.source();
        selectableIn = p.sink();
        agentWrites = Channels.newOutputStream(p.sink());
      } else {
        selectableOut = null;
        selectableIn = null;
        agentWrites = agentStdout.output();
      }
    }

    @Override
    public Optional<SelectableAgentStream> selectableStream() {
      SourceChannel src = selectableOut;
      if (src == null) {
        return Optional.empty();
      }
      return Optional.of(
          new SelectableAgentStream() {
            @Override
            public SelectableChannel channel() {
              return src;
            }

            @Override
            public int read(ByteBuffer scratch, Consumer<ByteBuffer> stdout) throws IOException {
              Error e = readError;
              if (e != null) {
                throw e;
              }
              scratch.clear();
              int n = src.read(scratch);
              if (n > 0) {
                scratch.flip();
                stdout.accept(scratch);
              }
              return n;
            }
          });
    }

    @Override
    public String id() {
      return "sbx0123456789abcdef";
    }

    @Override
    public InputStream fromAgent() {
      return fromAgent;
    }

    @Override
    public OutputStream toAgent() {
      return new OutputStream() {
        @Override
        public void write(int b) throws IOException {
          write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          if (toAgentBroken) {
            throw new IOException("Broken pipe");
          }
          writes.incrementAndGet();
          toAgent.write(b, off, len);
        }
      };
    }

    @Override
    public String diagnostics() {
      return diagnostics;
    }

    @Override
    public void close() {
      closed = true;
      agentStdout.close();
      agentStdin.close();
      closeQuietly(selectableIn);
      closeQuietly(selectableOut);
    }

    private static void closeQuietly(@Nullable Closeable c) {
      if (c != null) {
        try {
          c.close();
        } catch (IOException ignored) {
          // test pipe
        }
      }
    }

    /** The next frame the host sent (bounded wait). */
    Frame nextRequest() throws IOException {
      Frame f = FrameCodec.read(agentReads);
      assertThat(f).as("a request from the host").isNotNull();
      return f;
    }

    byte[] readRaw(int n) throws IOException {
      return agentReads.readNBytes(n);
    }

    void reply(ObjectNode header, byte[] payload) throws IOException {
      agentWrites.write(FrameCodec.encode(header, payload));
    }

    void replyRaw(byte[] bytes) throws IOException {
      agentWrites.write(bytes);
    }

    void agentExits() {
      agentStdout.close();
      closeQuietly(selectableIn);
    }
  }
}
