package io.agentnest.internal.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.SandboxClosedException;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SelectableAgentStream;
import io.agentnest.spi.support.DaemonThreads;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one long-lived, multiplexed channel to a sandbox's agent. Every call gets an id; the agent's
 * frames are routed to the call they belong to, read either by the shared {@link ChannelReactor}
 * (backends with a {@link SelectableAgentStream}: an idle sandbox then holds no thread) or by a
 * reader thread of this channel's own. If the agent dies or breaks the protocol, every pending call
 * fails at once with the reason: nothing waits forever.
 */
public final class AgentChannel implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AgentChannel.class);
  private static final ExecutorService DEATH = DaemonThreads.pool("agentnest-channel-death");

  /**
   * {@code -Dagentnest.channel.reactor=false} reads every channel on a thread of its own, as before
   * the reactor: a fallback, and the baseline {@code bench --only density} compares with.
   */
  private static final boolean REACTOR =
      !"false".equalsIgnoreCase(System.getProperty("agentnest.channel.reactor"));

  private volatile BackendSandbox connection;
  private final String sandboxId;
  private volatile OutputStream out;
  private final Object writeLock = new Object();
  // Frames held back by cork() until uncork() writes them at once (guarded by writeLock).
  private @Nullable ByteArrayOutputStream corked;
  private final ConcurrentHashMap<Long, Pending> pending = new ConcurrentHashMap<>();

  /**
   * Call ids start at a random point: calls that a previous attachment left running in the agent (a
   * client killed mid-exec) keep streaming under their ids, which a new attachment must never take
   * for its own calls.
   */
  private final AtomicLong ids =
      new AtomicLong(ThreadLocalRandom.current().nextLong(1L << 20, 1L << 50));

  private final CompletableFuture<Frame> ready = new CompletableFuture<>();
  // The reading side of the current connection: a thread of its own or a reactor registration.
  private volatile @Nullable Thread reader;
  private volatile @Nullable ReactorReader reactorReader;
  // One per channel, across connections: frames, ends and failures reach the channel in order.
  private final OrderedDispatch dispatch = new OrderedDispatch(ChannelReactor.dispatcher());
  // Bumped by resume(): a reader of an older connection ends silently instead of killing the
  // channel.
  private volatile int generation;
  private volatile boolean suspended;
  private volatile @Nullable String deathReason;
  private volatile boolean closing;
  private volatile boolean expired;
  private volatile @Nullable Consumer<Frame> tunnelListener;
  private volatile @Nullable Consumer<Frame> forwardListener;
  private final List<Runnable> onDeath = new CopyOnWriteArrayList<>();

  private record Pending(Consumer<Frame> events, CompletableFuture<Frame> done) {}

  public AgentChannel(BackendSandbox connection) {
    this.connection = connection;
    this.sandboxId = connection.id();
    startReading(0, connection);
    this.out = connection.toAgent();
  }

  private void startReading(int gen, BackendSandbox from) {
    Optional<SelectableAgentStream> selectable =
        REACTOR ? from.selectableStream() : Optional.empty();
    if (selectable.isPresent()) {
      reader = null;
      reactorReader = new ReactorReader(gen, selectable.get(), new ReactorSink(), dispatch);
      return;
    }
    reactorReader = null;
    InputStream in = new BufferedInputStream(from.fromAgent(), 256 * 1024);
    Thread t = new Thread(() -> readLoop(gen, in), "agentnest-channel-" + shortId(sandboxId));
    t.setDaemon(true);
    t.start();
    reader = t;
  }

  /** How frames read on the reactor come back into this channel. */
  private final class ReactorSink implements ReactorReader.Sink {
    @Override
    public boolean frame(int gen, Frame f) {
      if (gen != generation) {
        return false;
      }
      route(f);
      return true;
    }

    @Override
    public void end(int gen) {
      ended(gen);
    }

    @Override
    public void failed(int gen, IOException e) {
      readFailed(gen, e);
    }

    @Override
    public void crashed(Throwable e) {
      die("channel reader failed: " + e + "; the sandbox is unusable", e);
    }
  }

  /**
   * The sandbox's processes are about to be checkpointed (its connection will end): the end of the
   * stream is then expected, not the agent's death. Pending calls stay pending; their frames arrive
   * on the connection {@link #resume} brings.
   */
  public void suspend() {
    suspended = true;
  }

  public boolean isSuspended() {
    return suspended;
  }

  /** Continues on a new connection to the same agent, restored from a checkpoint. */
  public void resume(BackendSandbox next) {
    BackendSandbox old = connection;
    ReactorReader oldReader = reactorReader;
    synchronized (writeLock) {
      connection = next;
      generation++;
      suspended = false;
      startReading(generation, next);
      out = next.toAgent();
    }
    if (oldReader != null) {
      oldReader.stop();
    }
    old.close();
  }

  private static String shortId(String id) {
    return id.length() > 12 ? id.substring(0, 12) : id;
  }

  /** Sends raw bytes (the bootstrap payload) before the agent speaks the protocol. */
  public void sendRaw(byte[] bytes) {
    synchronized (writeLock) {
      writeLocked(bytes, "cannot write to the sandbox: ");
    }
  }

  /** Writes and flushes, holding writeLock; a failed write ends the channel. */
  private void writeLocked(byte[] bytes, String failure) {
    try {
      out.write(bytes);
      out.flush();
    } catch (IOException e) {
      throw die(failure + e.getMessage(), e);
    }
  }

  /** Waits for the agent's first frame after the bootstrap. */
  public Frame awaitReady(Duration timeout) {
    return await(ready, timeout, "start");
  }

  public long newId() {
    return ids.getAndIncrement();
  }

  /** Registers a call so that its frames are routed to {@code events} and its result awaited. */
  public CompletableFuture<Frame> register(long id, Consumer<Frame> events) {
    CompletableFuture<Frame> done = new CompletableFuture<>();
    String dead = deathReason;
    if (dead != null) {
      done.completeExceptionally(closed(dead));
      return done;
    }
    pending.put(id, new Pending(events, done));
    return done;
  }

  /** Sends one frame of a call. */
  public void send(ObjectNode header, byte[] payload) {
    String dead = deathReason;
    if (dead != null) {
      throw closed(dead);
    }
    byte[] frame = FrameCodec.encode(header, payload);
    synchronized (writeLock) {
      ByteArrayOutputStream held = corked;
      if (held != null) {
        held.writeBytes(frame);
        return;
      }
      writeLocked(frame, "cannot write to the sandbox agent: ");
    }
  }

  /**
   * Holds back the frames sent from now on (by any thread, in order) until {@link #uncork} writes
   * them in one go. A pooled sandbox's hand-out sends three frames back to back: one write lets the
   * agent take them with one read, where each write on its own travelled dockerd, the shim and,
   * under gVisor, woke the agent once more.
   */
  public void cork() {
    synchronized (writeLock) {
      if (corked == null) {
        corked = new ByteArrayOutputStream(1024);
      }
    }
  }

  /** Writes the frames held back since {@link #cork}; later sends write at once again. */
  public void uncork() {
    synchronized (writeLock) {
      ByteArrayOutputStream held = corked;
      corked = null;
      if (held != null && held.size() > 0) {
        writeLocked(held.toByteArray(), "cannot write to the sandbox agent: ");
      }
    }
  }

  /** Starts a call: registers it, sends its frame, returns the future of its final frame. */
  public CompletableFuture<Frame> call(ObjectNode header, byte[] payload, Consumer<Frame> events) {
    header.put("id", newId());
    return callWithId(header, payload, events);
  }

  /** {@link #call} for a header that already has its id from {@link #newId()}. */
  public CompletableFuture<Frame> callWithId(
      ObjectNode header, byte[] payload, Consumer<Frame> events) {
    long id = header.path("id").asLong();
    CompletableFuture<Frame> done = register(id, events);
    try {
      send(header, payload);
    } catch (RuntimeException e) {
      pending.remove(id);
      throw e;
    }
    return done;
  }

  /**
   * Sends {@code data} as frames of {@code op} for call {@code id}, at most {@code chunk} bytes
   * each, the last one marked {@code last}; {@code first} fields go on the first frame only. Stops
   * early once {@code done} completes (the agent refused); at least one frame is always sent.
   */
  public void sendChunks(
      String op, long id, ObjectNode first, byte[] data, int chunk, CompletableFuture<Frame> done) {
    int off = 0;
    do {
      int n = Math.min(chunk, data.length - off);
      boolean last = off + n >= data.length;
      ObjectNode h = Json.object().put(Ops.OP, op).put("id", id).put("last", last);
      if (off == 0) {
        h.setAll(first);
      }
      send(h, Arrays.copyOfRange(data, off, off + n));
      off += n;
    } while (off < data.length && !done.isDone());
  }

  /** A call with no streamed events, awaited. */
  public Frame request(ObjectNode header, byte[] payload, Duration timeout) {
    return await(call(header, payload, f -> {}), timeout, header.path(Ops.OP).asText());
  }

  public Frame await(CompletableFuture<Frame> done, Duration timeout, String what) {
    long deadline = System.nanoTime() + timeout.toNanos();
    return await(done, () -> deadline, what, timeout);
  }

  /**
   * Waits until {@code done} or until the deadline, which is read again whenever it is reached (a
   * call waiting for an approval moves it).
   */
  public Frame await(CompletableFuture<Frame> done, LongSupplier deadlineNanos, String what) {
    return await(done, deadlineNanos, what, null);
  }

  private Frame await(
      CompletableFuture<Frame> done,
      LongSupplier deadlineNanos,
      String what,
      @Nullable Duration fixedTimeout) {
    long started = System.nanoTime();
    try {
      while (true) {
        long wait = deadlineNanos.getAsLong() - System.nanoTime();
        if (wait <= 0) {
          throw new TimeoutException();
        }
        try {
          return done.get(wait, TimeUnit.NANOSECONDS);
        } catch (TimeoutException again) {
          // Loop: the deadline may have moved meanwhile.
        }
      }
    } catch (TimeoutException e) {
      // A fixed timeout is named as given (the measured wait overshoots it by scheduling noise).
      long timeoutMs =
          fixedTimeout != null
              ? fixedTimeout.toMillis()
              : (System.nanoTime() - started) / 1_000_000;
      throw new AgentNestException(
          "the agent of sandbox "
              + shortId(sandboxId)
              + " did not answer '"
              + what
              + "' within "
              + timeoutMs
              + " ms: the sandbox may be overloaded or stuck; check it with 'agentnest ls'"
              + " or destroy it");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while waiting for the sandbox agent", e);
    } catch (ExecutionException e) {
      Throwable c = e.getCause() == null ? e : e.getCause();
      if (c instanceof AgentNestException ane) {
        throw ane;
      }
      throw new AgentNestException("sandbox call failed: " + c, c);
    }
  }

  /** Forgets a call whose result is no longer wanted. */
  public void abandon(long id) {
    pending.remove(id);
  }

  /** Receives the egress tunnel frames (tcp_open, tcp_data, ...), which belong to no call. */
  public void onTunnelFrames(Consumer<Frame> listener) {
    this.tunnelListener = listener;
  }

  /**
   * Receives the tunnel frames of connections the host opened to an exposed port: their tunnel ids
   * are negative (the host numbers them), the agent's own egress tunnels count up from 1.
   */
  public void onForwardFrames(Consumer<Frame> listener) {
    this.forwardListener = listener;
  }

  /**
   * Runs {@code r} once when the channel dies (the agent exited, the protocol broke, or it was
   * closed), on a thread of its own: what carries connections over the channel ends them then.
   */
  public void onDeath(Runnable r) {
    onDeath.add(r);
    if (deathReason != null) {
      fireDeath();
    }
  }

  private void fireDeath() {
    List<Runnable> todo = new ArrayList<>(onDeath);
    onDeath.removeAll(todo);
    if (!todo.isEmpty()) {
      DEATH.execute(
          () ->
              todo.forEach(
                  r -> {
                    try {
                      r.run();
                    } catch (RuntimeException e) {
                      LOG.warn("channel death listener failed", e);
                    }
                  }));
    }
  }

  /** The sandbox ended because its TTL ran out, by the host's clock (never the agent's word). */
  public boolean expired() {
    return expired;
  }

  public void markExpired() {
    expired = true;
  }

  public boolean isAlive() {
    return deathReason == null;
  }

  public @Nullable String deathReason() {
    return deathReason;
  }

  private void readLoop(int gen, InputStream from) {
    try {
      while (true) {
        Frame f = FrameCodec.read(from);
        if (gen != generation) {
          return;
        }
        if (f == null) {
          ended(gen);
          return;
        }
        route(f);
      }
    } catch (IOException e) {
      readFailed(gen, e);
    } catch (RuntimeException e) {
      die("channel reader failed: " + e, e);
    } catch (Throwable e) {
      // An Error (OutOfMemoryError above all) would otherwise end this thread silently and leave
      // every pending call waiting for its deadline: fail them all now, then let the Error go on.
      die("channel reader failed: " + e + "; the sandbox is unusable", e);
      throw e;
    }
  }

  /** The connection of generation {@code gen} ended cleanly, between frames. */
  private void ended(int gen) {
    if (gen != generation || suspended) {
      return;
    }
    die(
        expired
            ? "the sandbox expired (its TTL ran out): create a new one, or extend() it"
                + " before expiry"
            : closing
                ? "the sandbox channel was closed"
                : "the sandbox agent exited (channel closed)" + lastWords(),
        null);
  }

  private void readFailed(int gen, IOException e) {
    if (gen != generation || suspended) {
      return;
    }
    if (e instanceof ProtocolException) {
      die("protocol violation from sandbox: " + e.getMessage() + "; the sandbox is unusable", e);
      return;
    }
    die(
        closing ? "the sandbox channel was closed" : "lost the sandbox channel: " + e + lastWords(),
        e);
  }

  private void route(Frame f) {
    String ev = f.ev();
    if (ev.equals(Ops.EV_READY)) {
      ready.complete(f);
      return;
    }
    if (ev.equals(Ops.EV_EXPIRED)) {
      // Sandbox code that gets hold of the channel could send this: expiry is decided by the
      // host's own clock (markExpired), the agent's word only ends its own process.
      LOG.debug("sandbox {} reports its TTL ran out; the host decides expiry", sandboxId);
      return;
    }
    if (Ops.isTunnelFrame(ev)) {
      Consumer<Frame> t = f.header().path("tid").asLong(0) < 0 ? forwardListener : tunnelListener;
      if (t != null) {
        t.accept(f);
      }
      return;
    }
    long id = f.id();
    Pending p = pending.get(id);
    if (p == null) {
      LOG.debug("dropping frame '{}' for unknown call {}", ev, id);
      return;
    }
    if (ev.equals(Ops.EV_RESULT) || ev.equals(Ops.EV_ERROR)) {
      pending.remove(id);
      p.done.complete(f);
      return;
    }
    try {
      p.events.accept(f);
    } catch (RuntimeException e) {
      LOG.warn("output listener of call {} failed", id, e);
    }
  }

  /** What the backend saw of the agent's end (its stderr, the container's state), if anything. */
  private String lastWords() {
    String diag;
    try {
      diag = connection.diagnostics();
    } catch (RuntimeException e) {
      return "";
    }
    return diag.isBlank() ? "" : "; its last words: " + diag.strip();
  }

  private SandboxClosedException die(String reason, @Nullable Throwable cause) {
    String first = deathReason;
    if (first == null) {
      deathReason = reason;
      first = reason;
      SandboxClosedException ex = closed(reason);
      ready.completeExceptionally(ex);
      for (Long id : pending.keySet()) {
        Pending p = pending.remove(id);
        if (p != null) {
          p.done.completeExceptionally(ex);
        }
      }
      if (cause != null) {
        LOG.debug("channel of {} died", sandboxId, cause);
      }
      fireDeath();
    }
    return closed(first);
  }

  private SandboxClosedException closed(String reason) {
    return new SandboxClosedException("sandbox " + shortId(sandboxId) + ": " + reason);
  }

  @Override
  public void close() {
    close("the sandbox channel was closed");
  }

  /** Closes the channel; pending and later calls fail with {@code reason}. */
  public void close(String reason) {
    closing = true;
    // The reason first: closing the connection wakes the reader, which would otherwise fail the
    // calls with a bare "channel was closed" before this reason is set.
    die(reason, null);
    ReactorReader r = reactorReader;
    if (r != null) {
      r.stop();
    }
    connection.close();
  }
}
