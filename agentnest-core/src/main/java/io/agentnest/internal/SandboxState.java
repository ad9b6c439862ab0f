package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ForkReport;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The state of a sandbox that fork and snapshots carry without a process checkpoint: its files
 * (workspace and scratch space, as tar streams) and each Python session's pickled namespace.
 *
 * <p>The primitives stream: {@link #captureFiles} and {@link #dumpSession} write into any sink,
 * {@link #restoreFiles} and {@link #loadSession} read from any source. Fork keeps the parts in
 * memory ({@link #capture}, {@link #restore}); snapshots write them to files and read them back
 * while checking their hashes. Everything read from the sandbox is bounded.
 */
public final class SandboxState {
  /** Bytes of one session's saved namespace, and what went into it. */
  public record Session(
      String name,
      byte[] data,
      long extraBytes,
      List<String> variables,
      List<ForkReport.Skipped> skipped) {}

  /** What a session reported about its saved namespace (the bytes went to the sink). */
  public record Dumped(
      String name,
      long bytes,
      long extraBytes,
      List<String> variables,
      List<ForkReport.Skipped> skipped,
      boolean failed) {}

  /** A captured sandbox state; tar bytes of /workspace and /tmp, and the sessions. */
  public record Captured(byte[] workspace, byte[] tmp, List<Session> sessions) {
    public long fileBytes() {
      return workspace.length + (long) tmp.length;
    }

    public long stateBytes() {
      return sessions.stream().mapToLong(s -> s.data().length).sum();
    }

    public List<ForkReport.Skipped> skipped() {
      List<ForkReport.Skipped> all = new ArrayList<>();
      sessions.forEach(s -> all.addAll(s.skipped()));
      return all;
    }

    public Map<String, List<String>> variables() {
      Map<String, List<String>> m = new LinkedHashMap<>();
      sessions.forEach(s -> m.put(s.name(), s.variables()));
      return m;
    }
  }

  static final long MAX_FILES_BYTES = 4L << 30;
  // A session's state is passed as one byte array into the sandbox: stay below the array limit.
  static final long MAX_STATE_BYTES = Integer.MAX_VALUE - 64L;
  static final int MAX_SESSIONS = 256;
  private static final Duration STATE_TIMEOUT = Duration.ofMinutes(3);

  private SandboxState() {}

  // ------------------------------------------------------------------------- in memory (fork)

  /** Captures files and every live Python session of {@code sb} into memory. */
  static Captured capture(DefaultSandbox sb, List<String> sessionNames) {
    ByteArrayOutputStream ws = new ByteArrayOutputStream(1 << 20);
    ByteArrayOutputStream tmp = new ByteArrayOutputStream(1 << 16);
    captureFiles(sb, ws, tmp);
    List<Session> sessions = new ArrayList<>();
    for (String name : sessionNames) {
      ByteArrayOutputStream buf = new ByteArrayOutputStream(1 << 16);
      Dumped d = dumpSession(sb, name, buf);
      if (d != null) {
        sessions.add(
            new Session(
                name,
                d.failed() ? new byte[0] : buf.toByteArray(),
                d.extraBytes(),
                d.variables(),
                d.skipped()));
      }
    }
    return new Captured(ws.toByteArray(), tmp.toByteArray(), sessions);
  }

  /** Puts a captured state into a fresh sandbox. */
  static void restore(DefaultSandbox target, Captured c) {
    restoreFiles(
        target,
        c.workspace().length > 0 ? new ByteArrayInputStream(c.workspace()) : null,
        c.tmp().length > 0 ? new ByteArrayInputStream(c.tmp()) : null);
    for (Session s : c.sessions()) {
      if (s.data().length > 0) {
        loadSession(target, s.name(), s.extraBytes(), s.data());
      }
    }
  }

  // ------------------------------------------------------------------------ streaming parts

  /** Streams tars of the workspace and the scratch space of {@code sb} into the two sinks. */
  static void captureFiles(DefaultSandbox sb, OutputStream workspace, OutputStream tmp) {
    SandboxArchives archives = sb.archives();
    if (sb.config().readOnlyWorkspace()) {
      // Nothing to carry: a read-only workspace is the image's, which a copy starts from too.
      try {
        workspace.write(new byte[1024]); // an empty tar: its two zero end-of-archive blocks
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    } else {
      archives.tarOut(SandboxArchives.WORKSPACE, List.of(), false, MAX_FILES_BYTES, workspace);
    }
    archives.tarOut(SandboxArchives.TMP, List.of(), false, MAX_FILES_BYTES, tmp);
  }

  /** Unpacks the tars (null: nothing to unpack) into a fresh sandbox's workspace and /tmp. */
  static void restoreFiles(
      DefaultSandbox target, @Nullable InputStream workspace, @Nullable InputStream tmp) {
    SandboxArchives archives = target.archives();
    try {
      if (workspace != null && target.config().readOnlyWorkspace()) {
        // Read to the end (a snapshot part is hashed as it is read), unpacked nowhere: the kernel
        // would refuse every write, and the image already holds this workspace.
        workspace.transferTo(OutputStream.nullOutputStream());
      } else if (workspace != null) {
        archives.tarIn(SandboxArchives.WORKSPACE, "", workspace, false, MAX_FILES_BYTES);
      }
      if (tmp != null) {
        archives.tarIn(SandboxArchives.TMP, "", tmp, false, MAX_FILES_BYTES);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Streams session {@code name}'s pickled namespace into {@code sink}; null when the session has
   * no interpreter running. A namespace that cannot be saved at all comes back {@code failed}, with
   * the reason in {@code skipped} (the sink then holds nothing usable).
   */
  static @Nullable Dumped dumpSession(DefaultSandbox sb, String name, OutputStream sink) {
    return finishDump(startDump(sb, name, sink, null), -1);
  }

  /** A save request in flight: its bytes go to the sink as they arrive. */
  private record PendingDump(
      DefaultSandbox sb,
      String name,
      CompletableFuture<Frame> done,
      long[] got,
      boolean[] over,
      IOException[] failed) {}

  private static PendingDump startDump(
      DefaultSandbox sb, String name, OutputStream sink, @Nullable String bulkToken) {
    long[] got = {0};
    boolean[] over = {false};
    IOException[] failed = {null};
    AgentChannel ch = sb.channel();
    ObjectNode req = Json.object().put("op", "py_dump").put("session", name);
    if (bulkToken != null) {
      req.put("bulk", bulkToken);
    }
    CompletableFuture<Frame> done =
        ch.call(
            req,
            new byte[0],
            f -> {
              if (!f.ev().equals("data") || over[0] || failed[0] != null) {
                return;
              }
              if (got[0] + f.payload().length > MAX_STATE_BYTES) {
                over[0] = true;
                return;
              }
              got[0] += f.payload().length;
              try {
                sink.write(f.payload());
              } catch (IOException e) {
                failed[0] = e;
              }
            });
    return new PendingDump(sb, name, done, got, over, failed);
  }

  /**
   * The saved namespace's description once the save request ends; {@code bulkBytes} is what went
   * over the bulk link (-1: nothing, all came as frames).
   */
  private static @Nullable Dumped finishDump(PendingDump p, long bulkBytes) {
    String name = p.name();
    Frame f = p.sb().channel().await(p.done(), STATE_TIMEOUT, "save session " + name);
    if (f.ev().equals("err")) {
      throw p.sb().agentError(f.header());
    }
    JsonNode h = f.header();
    if (!h.path("present").asBoolean()) {
      return null;
    }
    if (p.over()[0]) {
      throw new AgentNestException(
          "session '" + name + "' holds more than " + MAX_STATE_BYTES + " bytes of state");
    }
    if (p.failed()[0] != null) {
      throw new AgentNestException(
          "saving session '" + name + "' failed: " + p.failed()[0].getMessage(), p.failed()[0]);
    }
    List<ForkReport.Skipped> skipped = new ArrayList<>();
    if (h.hasNonNull("error")) {
      skipped.add(
          new ForkReport.Skipped(
              name, "*", "session", Bounded.text(h.path("error").asText(), 500)));
      return new Dumped(name, 0, 0, List.of(), skipped, true);
    }
    long got = p.got()[0];
    if (bulkBytes >= 0) {
      if (got != 0 || h.path("bulk").asLong(-1) != bulkBytes) {
        throw new AgentNestException("session '" + name + "' sent a malformed state");
      }
      got = bulkBytes;
    }
    h.path("skipped")
        .forEach(
            s -> {
              if (skipped.size() < 1000) {
                skipped.add(
                    new ForkReport.Skipped(
                        name,
                        Bounded.text(s.path("name").asText(), 200),
                        Bounded.text(s.path("type").asText(), 200),
                        Bounded.text(s.path("reason").asText(), 300)));
              }
            });
    List<String> vars = new ArrayList<>();
    h.path("vars")
        .forEach(
            v -> {
              if (vars.size() < 10_000) {
                vars.add(Bounded.text(v.asText(), 200));
              }
            });
    long extra = h.path("extra_bytes").asLong();
    if (extra < 0 || extra > got) {
      throw new AgentNestException("session '" + name + "' sent a malformed state");
    }
    return new Dumped(name, got, extra, vars, skipped, false);
  }

  // ------------------------------------------------------------------ bulk link (fork)

  /** A fork's copy and the host end of its bulk link. */
  record Copy(DefaultSandbox sandbox, BulkLink link) {}

  private static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
      DaemonThreads.scheduler("agentnest-bulk-watchdog");

  /**
   * Moves session {@code name}'s namespace from {@code sb} into every copy over the bulk links: the
   * session pickles while the copies still start ({@code copies} is asked only once the bytes are
   * ready), then the bytes stream to all copies at once and each unpickles them as they come. A
   * session that could not use the link sends its state as frames, which are loaded the slow way.
   * Null when the session has no interpreter.
   */
  static @Nullable Dumped relaySession(
      DefaultSandbox sb,
      BulkLink link,
      String name,
      java.util.function.BooleanSupplier copiesReady,
      java.util.function.Supplier<List<Copy>> copies) {
    String token = link.expect();
    ByteArrayOutputStream frames = new ByteArrayOutputStream();
    PendingDump p = startDump(sb, name, frames, token);
    long relayed;
    try {
      relayed =
          relay(
              "session '" + name + "'",
              p.done(),
              token,
              link,
              true,
              MAX_STATE_BYTES,
              copiesReady,
              copies,
              (c, t) ->
                  c.sandbox()
                      .channel()
                      .call(
                          Json.object()
                              .put("op", "py_load_bulk")
                              .put("session", name)
                              .put("bulk", t),
                          new byte[0],
                          f -> {}));
    } catch (AgentNestException e) {
      throw sessionsReason(p, e);
    }
    if (relayed < 0) {
      // The session answered without the link (none running, or it could not save): as frames.
      Dumped d = finishDump(p, -1);
      if (d != null && !d.failed() && d.bytes() > 0) {
        byte[] data = frames.toByteArray();
        for (Copy c : copies.get()) {
          loadSession(c.sandbox(), name, d.extraBytes(), data);
        }
      }
      return d;
    }
    return finishDump(p, relayed);
  }

  /**
   * The session's own reason for a broken transfer, when it gives one soon (it says more than a
   * link that ended early), else {@code broken}.
   */
  private static AgentNestException sessionsReason(PendingDump p, AgentNestException broken) {
    try {
      p.done().get(5, java.util.concurrent.TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      return broken;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return broken;
    }
    AgentNestException reason;
    try {
      Dumped d = finishDump(p, -1);
      if (d == null || !d.failed()) {
        return broken;
      }
      reason = new AgentNestException(d.skipped().get(0).reason(), broken);
    } catch (AgentNestException agent) {
      reason = agent;
      reason.addSuppressed(broken);
    }
    return reason;
  }

  /**
   * Moves the tar of {@code root} (workspace or scratch space) from {@code sb} into every copy over
   * the bulk links, unpacked there as it streams; the bytes moved.
   */
  static long relayFiles(
      DefaultSandbox sb,
      BulkLink link,
      String root,
      java.util.function.BooleanSupplier copiesReady,
      java.util.function.Supplier<List<Copy>> copies) {
    String token = link.expect();
    CompletableFuture<Frame> done =
        sb.channel()
            .call(
                Json.object()
                    .put("op", "tar_out")
                    .put("root", root)
                    .put("mode", "full")
                    .put("max_bytes", MAX_FILES_BYTES)
                    .put("bulk", token),
                new byte[0],
                f -> {});
    long relayed =
        relay(
            root,
            done,
            token,
            link,
            false,
            MAX_FILES_BYTES,
            copiesReady,
            copies,
            (c, t) ->
                c.sandbox()
                    .channel()
                    .call(
                        Json.object()
                            .put("op", "tar_in")
                            .put("root", root)
                            .put("path", "")
                            .put("strict", false)
                            .put("max_bytes", MAX_FILES_BYTES)
                            .put("max_entries", 100_000)
                            .put("last", true)
                            .put("bulk", t),
                        new byte[0],
                        f -> {}));
    Frame f = sb.channel().await(done, STATE_TIMEOUT, "copy " + root + " out");
    if (f.ev().equals("err")) {
      throw sb.agentError(f.header());
    }
    if (relayed < 0 || f.header().path("bytes").asLong(-1) != relayed) {
      throw new AgentNestException(
          "sandbox " + sb.id() + " sent a malformed archive of " + root + " over the bulk link");
    }
    return relayed;
  }

  /**
   * Carries one stream from {@code parent}'s connection (it presents {@code token}) to a connection
   * from each copy (started by {@code startCopy} with the copy's own token) and waits for every
   * copy's answer; the bytes carried, or -1 when the parent answered without connecting.
   */
  private static long relay(
      String what,
      CompletableFuture<Frame> parent,
      String token,
      BulkLink link,
      boolean framed,
      long max,
      java.util.function.BooleanSupplier copiesReady,
      java.util.function.Supplier<List<Copy>> copies,
      java.util.function.BiFunction<Copy, String, CompletableFuture<Frame>> startCopy) {
    long deadline = System.nanoTime() + STATE_TIMEOUT.toNanos();
    java.nio.channels.SocketChannel from = link.accept(token, deadline, parent::isDone);
    if (from == null) {
      return -1;
    }
    StateRelay relay = new StateRelay(what, from, framed, max);
    java.util.concurrent.ScheduledFuture<?> watchdog =
        WATCHDOG.schedule(
            relay::close, STATE_TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    try {
      relay.run(copiesReady, copies, startCopy, deadline);
      return relay.relayed;
    } catch (IOException e) {
      throw new AgentNestException(
          "moving "
              + what
              + " over the bulk link failed: "
              + e.getMessage()
              + (watchdog.isDone() ? " (it took longer than " + STATE_TIMEOUT + ")" : ""),
          e);
    } finally {
      watchdog.cancel(false);
      relay.close();
    }
  }

  /**
   * Carries one stream from the parent's connection to the copies'. Framed (a session's state): u32
   * length + extra pickle, then chunks of at most 1 MiB, each attempt ended by END or ABORT, all
   * checked. Raw (a tar): whatever comes until the parent closes. Either way bounded by {@code
   * max}. Until the copies run, what arrives waits in memory, so the parent works on meanwhile.
   */
  private static final class StateRelay {
    private static final int END = 0;
    private static final int ABORT = -1;
    private static final int MAX_CHUNK = 1 << 20;
    private static final int MAX_EXTRA = 64 << 20;
    private static final int MAX_ATTEMPTS = 4;
    private static final long DIRECT_LIMIT = 256L << 20;
    private final String what;
    private final java.nio.channels.SocketChannel from;
    private final boolean framed;
    private final long max;
    private final List<java.nio.channels.SocketChannel> to =
        new java.util.concurrent.CopyOnWriteArrayList<>();
    // Everything read so far, in order; each copy's writer sends it at the copy's own pace, so a
    // slow copy never holds the parent or the others back.
    private final List<java.nio.ByteBuffer> chunks = new ArrayList<>();
    private boolean complete;
    private final List<CompletableFuture<Void>> writers = new ArrayList<>();
    long relayed;

    StateRelay(String what, java.nio.channels.SocketChannel from, boolean framed, long max) {
      this.what = what;
      this.from = from;
      this.framed = framed;
      this.max = max;
    }

    void run(
        java.util.function.BooleanSupplier copiesReady,
        java.util.function.Supplier<List<Copy>> copies,
        java.util.function.BiFunction<Copy, String, CompletableFuture<Frame>> startCopy,
        long deadline)
        throws IOException {
      List<CompletableFuture<Frame>> answers = new ArrayList<>();
      List<Copy> targets = null;
      try {
        if (framed) {
          readFramed(copiesReady, copies, startCopy, answers, deadline);
        } else {
          java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocateDirect(MAX_CHUNK);
          while (true) {
            buf.clear();
            int n = from.read(buf);
            if (n < 0) {
              break;
            }
            if (relayed + n > max) {
              throw tooLarge();
            }
            buf.flip();
            append(copyOf(buf));
            relayed += n;
            if (!connected() && copiesReady.getAsBoolean()) {
              connect(copies.get(), startCopy, answers, deadline);
            }
          }
        }
      } finally {
        synchronized (chunks) {
          complete = true;
          chunks.notifyAll();
        }
      }
      targets = connected() ? copies.get() : connect(copies.get(), startCopy, answers, deadline);
      for (int i = 0; i < targets.size(); i++) {
        DaemonThreads.join(writers.get(i));
        DefaultSandbox copy = targets.get(i).sandbox();
        Frame f = copy.channel().await(answers.get(i), STATE_TIMEOUT, "move " + what + " in");
        if (f.ev().equals("err")) {
          throw copy.agentError(f.header());
        }
      }
    }

    private void readFramed(
        java.util.function.BooleanSupplier copiesReady,
        java.util.function.Supplier<List<Copy>> copies,
        java.util.function.BiFunction<Copy, String, CompletableFuture<Frame>> startCopy,
        List<CompletableFuture<Frame>> answers,
        long deadline)
        throws IOException {
      int extra = readLength();
      if (extra < 0 || extra > MAX_EXTRA) {
        throw malformed();
      }
      read(extra);
      int attempts = 1;
      while (true) {
        int n = readLength();
        if (n == END) {
          return;
        }
        if (n == ABORT) {
          if (++attempts > MAX_ATTEMPTS) {
            throw malformed();
          }
          continue;
        }
        if (n < 0 || n > MAX_CHUNK) {
          throw malformed();
        }
        if (relayed + n > max) {
          throw tooLarge();
        }
        read(n);
        if (!connected() && copiesReady.getAsBoolean()) {
          connect(copies.get(), startCopy, answers, deadline);
        }
      }
    }

    private boolean connected() {
      return !writers.isEmpty();
    }

    /** Has every copy read from its link, each fed by its own writer. */
    private List<Copy> connect(
        List<Copy> copies,
        java.util.function.BiFunction<Copy, String, CompletableFuture<Frame>> startCopy,
        List<CompletableFuture<Frame>> answers,
        long deadline) {
      for (Copy c : copies) {
        String t = c.link().expect();
        CompletableFuture<Frame> done = startCopy.apply(c, t);
        answers.add(done);
        java.nio.channels.SocketChannel ch = c.link().accept(t, deadline, done::isDone);
        if (ch == null) {
          throw answeredWithoutReading(c.sandbox(), done);
        }
        to.add(ch);
        writers.add(CompletableFuture.runAsync(() -> feed(ch), WRITERS));
      }
      return copies;
    }

    private AgentNestException answeredWithoutReading(
        DefaultSandbox target, CompletableFuture<Frame> done) {
      Frame f = target.channel().await(done, STATE_TIMEOUT, "move " + what + " in");
      return f.ev().equals("err")
          ? target.agentError(f.header())
          : new AgentNestException(
              "copy " + target.id() + " answered for " + what + " without reading it");
    }

    private void feed(java.nio.channels.SocketChannel ch) {
      try {
        for (int i = 0; ; i++) {
          java.nio.ByteBuffer b;
          synchronized (chunks) {
            while (i >= chunks.size() && !complete) {
              chunks.wait();
            }
            if (i >= chunks.size()) {
              break;
            }
            b = chunks.get(i).duplicate();
          }
          while (b.hasRemaining()) {
            ch.write(b);
          }
        }
        ch.shutdownOutput();
      } catch (IOException e) {
        throw new AgentNestException("the bulk link to a copy failed: " + e.getMessage(), e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted while moving " + what, e);
      }
    }

    private int readLength() throws IOException {
      java.nio.ByteBuffer len = read(4);
      return len.getInt(0);
    }

    /** Reads {@code n} bytes from the parent and queues them for the copies. */
    private java.nio.ByteBuffer read(int n) throws IOException {
      // Direct buffers spare a copy on every read and on every copy's write; past a few hundred
      // MB the heap takes over, so that a big state cannot exhaust direct memory.
      java.nio.ByteBuffer b =
          relayed < DIRECT_LIMIT
              ? java.nio.ByteBuffer.allocateDirect(n)
              : java.nio.ByteBuffer.allocate(n);
      readFully(from, b);
      b.flip();
      relayed += n;
      append(b);
      return b;
    }

    private java.nio.ByteBuffer copyOf(java.nio.ByteBuffer src) {
      java.nio.ByteBuffer b =
          relayed < DIRECT_LIMIT
              ? java.nio.ByteBuffer.allocateDirect(src.remaining())
              : java.nio.ByteBuffer.allocate(src.remaining());
      b.put(src).flip();
      return b;
    }

    private void append(java.nio.ByteBuffer b) {
      synchronized (chunks) {
        chunks.add(b);
        chunks.notifyAll();
      }
    }

    private AgentNestException malformed() {
      return new AgentNestException(what + " arrived malformed over the bulk link");
    }

    private AgentNestException tooLarge() {
      return new AgentNestException(what + " is larger than " + max + " bytes");
    }

    void close() {
      closeQuietly(from);
      to.forEach(SandboxState::closeQuietly);
      synchronized (chunks) {
        complete = true;
        chunks.notifyAll();
      }
    }
  }

  private static final java.util.concurrent.ExecutorService WRITERS =
      DaemonThreads.pool("agentnest-bulk-writer");

  private static void readFully(java.nio.channels.SocketChannel c, java.nio.ByteBuffer b)
      throws IOException {
    while (b.hasRemaining()) {
      if (c.read(b) < 0) {
        throw new java.io.EOFException("the bulk link ended early");
      }
    }
  }

  private static void closeQuietly(java.nio.channels.SocketChannel c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing to unblock or to finish: nothing more to do
    }
  }

  /** Replaces session {@code name}'s namespace in {@code target} with a saved one. */
  static void loadSession(DefaultSandbox target, String name, long extraBytes, byte[] data) {
    AgentChannel ch = target.channel();
    long id = ch.newId();
    CompletableFuture<Frame> done = ch.register(id, f -> {});
    ch.sendChunks(
        "py_load",
        id,
        Json.object().put("session", name).put("extra_bytes", extraBytes),
        data,
        DefaultSandboxFiles.CHUNK,
        done);
    Frame f = ch.await(done, STATE_TIMEOUT, "restore session " + name);
    if (f.ev().equals("err")) {
      throw target.agentError(f.header());
    }
  }

  /** A session name as it may travel in a request and a manifest. */
  static boolean validSessionName(String name) {
    return name.matches("[A-Za-z0-9_.-]{1,64}");
  }
}
