package io.agentnest.internal.state;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ForkReport;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.files.DefaultSandboxFiles;
import io.agentnest.internal.files.SandboxArchives;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.BulkLink;
import io.agentnest.spi.support.DaemonThreads;
import java.io.EOFException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The state of a sandbox that fork and snapshots carry without a process checkpoint: its files
 * (workspace and scratch space, as tar streams) and each Python session's pickled namespace.
 *
 * <p>The primitives stream: {@link #captureFiles} and {@link #dumpSession} write into any sink,
 * {@link #restoreFiles} and {@link #loadSession} read from any source. Fork keeps the parts in
 * memory ({@link #capture}, {@link #restore}); snapshots write them to files and read them back
 * while checking their hashes. Everything read from the sandbox is bounded.
 *
 * <p>Why this file is just over 600 lines: each primitive is a request to the agent and the bounded
 * reading of its answer, and the in-memory, spilled and relayed forms of fork share those readers;
 * {@link StateRelay}, {@link Spill} and {@link RelayBuffer} already hold the transport.
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

  public static final long MAX_FILES_BYTES = 4L << 30;
  // A session's state is passed as one byte array into the sandbox: stay below the array limit.
  public static final long MAX_STATE_BYTES = Integer.MAX_VALUE - 64L;
  public static final int MAX_SESSIONS = 256;
  private static final Duration STATE_TIMEOUT = Duration.ofMinutes(3);

  private SandboxState() {}

  // ------------------------------------------------------------------ without a bulk link (fork)

  /** A session's saved namespace, held in a {@link Spill}. */
  record SpilledSession(
      String name,
      Spill data,
      long extraBytes,
      List<String> variables,
      List<ForkReport.Skipped> skipped) {}

  /**
   * A captured state held on the host while the copies start: in memory up to a few MiB each part,
   * then in temporary files. Close it to delete them.
   */
  public record Spilled(Spill workspace, Spill tmp, List<SpilledSession> sessions)
      implements AutoCloseable {
    public long fileBytes() {
      return workspace.size() + tmp.size();
    }

    public long stateBytes() {
      return sessions.stream().mapToLong(s -> s.data().size()).sum();
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

    @Override
    public void close() {
      workspace.close();
      tmp.close();
      sessions.forEach(s -> s.data().close());
    }
  }

  /**
   * Captures files and every live Python session of {@code sb}, within {@code budget}, into spills
   * (a fork without a bulk link).
   */
  public static Spilled capture(SandboxContext sb, List<String> sessionNames, StateBudget budget) {
    Spill ws = Spill.temporary();
    Spill tmp = Spill.temporary();
    List<SpilledSession> sessions = new ArrayList<>();
    Spilled spilled = new Spilled(ws, tmp, sessions);
    boolean done = false;
    try {
      captureFiles(sb, ws, tmp, budget);
      for (String name : sessionNames) {
        Spill data = Spill.temporary();
        sessions.add(new SpilledSession(name, data, 0, List.of(), List.of()));
        Dumped d = dumpSession(sb, name, data, budget);
        sessions.remove(sessions.size() - 1);
        if (d == null) {
          data.close();
          continue;
        }
        if (d.failed()) {
          data.close();
          data = Spill.temporary();
        }
        sessions.add(new SpilledSession(name, data, d.extraBytes(), d.variables(), d.skipped()));
      }
      done = true;
      return spilled;
    } finally {
      if (!done) {
        spilled.close();
      }
    }
  }

  /** Puts a spilled state into a fresh sandbox. */
  public static void restore(SandboxContext target, Spilled c) {
    try (InputStream ws = c.workspace().size() > 0 ? c.workspace().open() : null;
        InputStream tmp = c.tmp().size() > 0 ? c.tmp().open() : null) {
      restoreFiles(target, ws, tmp);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (SpilledSession s : c.sessions()) {
      if (s.data().size() > 0) {
        try (InputStream in = s.data().open()) {
          loadSession(target, s.name(), s.extraBytes(), in, s.data().size());
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
  }

  // ------------------------------------------------------------------------ streaming parts

  /**
   * Streams tars of the workspace and the scratch space of {@code sb} into the two sinks, within
   * {@code budget}.
   */
  public static void captureFiles(
      SandboxContext sb, OutputStream workspace, OutputStream tmp, StateBudget budget) {
    SandboxArchives archives = sb.archives();
    long max = Math.min(MAX_FILES_BYTES, budget.limit());
    if (sb.config().readOnlyWorkspace()) {
      // Nothing to carry: a read-only workspace is the image's, which a copy starts from too.
      try {
        workspace.write(new byte[1024]); // an empty tar: its two zero end-of-archive blocks
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    } else {
      archives.tarOut(
          SandboxArchives.WORKSPACE,
          List.of(),
          false,
          max,
          counted(workspace, budget, "the archive of /workspace"));
    }
    archives.tarOut(
        SandboxArchives.TMP, List.of(), false, max, counted(tmp, budget, "the archive of /tmp"));
  }

  /** {@code out}, with every byte counted against {@code budget}. */
  private static OutputStream counted(OutputStream out, StateBudget budget, String what) {
    return new FilterOutputStream(out) {
      @Override
      public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        budget.take(len, what);
        out.write(b, off, len);
      }
    };
  }

  /** Unpacks the tars (null: nothing to unpack) into a fresh sandbox's workspace and /tmp. */
  public static void restoreFiles(
      SandboxContext target, @Nullable InputStream workspace, @Nullable InputStream tmp) {
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
  public static @Nullable Dumped dumpSession(
      SandboxContext sb, String name, OutputStream sink, StateBudget budget) {
    return finishDump(startDump(sb, name, sink, null, budget), -1);
  }

  /** A save request in flight: its bytes go to the sink as they arrive. */
  private record PendingDump(
      SandboxContext sb,
      String name,
      CompletableFuture<Frame> done,
      long[] got,
      AgentNestException[] over,
      IOException[] failed) {}

  private static PendingDump startDump(
      SandboxContext sb,
      String name,
      OutputStream sink,
      @Nullable String bulkToken,
      StateBudget budget) {
    long[] got = {0};
    AgentNestException[] over = {null};
    IOException[] failed = {null};
    AgentChannel ch = sb.channel();
    ObjectNode req = Json.object().put(Ops.OP, Ops.OP_PY_DUMP).put("session", name);
    if (bulkToken != null) {
      req.put("bulk", bulkToken);
    }
    CompletableFuture<Frame> done =
        ch.call(
            req,
            new byte[0],
            f -> {
              if (!f.ev().equals(Ops.EV_DATA) || over[0] != null || failed[0] != null) {
                return;
              }
              if (got[0] + f.payload().length > MAX_STATE_BYTES) {
                over[0] =
                    new AgentNestException(
                        "session '"
                            + name
                            + "' holds more than "
                            + MAX_STATE_BYTES
                            + " bytes of state");
                return;
              }
              try {
                budget.take(f.payload().length, "session '" + name + "'");
              } catch (AgentNestException e) {
                over[0] = e;
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
    if (f.ev().equals(Ops.EV_ERROR)) {
      throw p.sb().agentError(f.header());
    }
    JsonNode h = f.header();
    if (!h.path("present").asBoolean()) {
      return null;
    }
    AgentNestException over = p.over()[0];
    if (over != null) {
      throw over;
    }
    if (p.failed()[0] != null) {
      throw new AgentNestException(
          "saving session '" + name + "' failed: " + p.failed()[0].getMessage(), p.failed()[0]);
    }
    // Names and reasons are the sandbox's text: they reach fork reports, logs and snapshot
    // manifests, so secrets in them are masked like output.
    SandboxContext sb = p.sb();
    List<ForkReport.Skipped> skipped = new ArrayList<>();
    if (h.hasNonNull("error")) {
      skipped.add(
          new ForkReport.Skipped(
              name, "*", "session", sb.redact(Bounded.text(h.path("error").asText(), 500))));
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
                        sb.redact(Bounded.text(s.path("name").asText(), 200)),
                        sb.redact(Bounded.text(s.path("type").asText(), 200)),
                        sb.redact(Bounded.text(s.path("reason").asText(), 300))));
              }
            });
    List<String> vars = new ArrayList<>();
    h.path("vars")
        .forEach(
            v -> {
              if (vars.size() < 10_000) {
                vars.add(sb.redact(Bounded.text(v.asText(), 200)));
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
  public record Copy(SandboxContext sandbox, BulkLink link) {}

  private static final ScheduledExecutorService WATCHDOG =
      DaemonThreads.scheduler("agentnest-bulk-watchdog");

  /**
   * Moves session {@code name}'s namespace from {@code sb} into every copy over the bulk links: the
   * session pickles while the copies still start ({@code copies} is asked only once the bytes are
   * ready), then the bytes stream to all copies at once and each unpickles them as they come. A
   * session that could not use the link sends its state as frames, which are loaded the slow way.
   * Null when the session has no interpreter.
   */
  public static @Nullable Dumped relaySession(
      SandboxContext sb,
      BulkLink link,
      String name,
      BooleanSupplier copiesReady,
      Supplier<List<Copy>> copies,
      StateBudget budget) {
    String token = link.expect();
    try (Spill frames = Spill.temporary()) {
      return relaySession(sb, link, name, copiesReady, copies, budget, token, frames);
    }
  }

  private static @Nullable Dumped relaySession(
      SandboxContext sb,
      BulkLink link,
      String name,
      BooleanSupplier copiesReady,
      Supplier<List<Copy>> copies,
      StateBudget budget,
      String token,
      Spill frames) {
    PendingDump p = startDump(sb, name, frames, token, budget);
    long relayed;
    try {
      relayed =
          relay(
              "session '" + name + "'",
              p.done(),
              token,
              link,
              true,
              budget,
              copiesReady,
              copies,
              (c, t) ->
                  c.sandbox()
                      .channel()
                      .call(
                          Json.object()
                              .put(Ops.OP, Ops.OP_PY_LOAD_BULK)
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
        for (Copy c : copies.get()) {
          try (InputStream in = frames.open()) {
            loadSession(c.sandbox(), name, d.extraBytes(), in, frames.size());
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
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
      p.done().get(5, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
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
  public static long relayFiles(
      SandboxContext sb,
      BulkLink link,
      String root,
      BooleanSupplier copiesReady,
      Supplier<List<Copy>> copies,
      StateBudget budget) {
    String token = link.expect();
    long max = Math.min(MAX_FILES_BYTES, budget.limit());
    CompletableFuture<Frame> done =
        sb.channel()
            .call(
                Json.object()
                    .put(Ops.OP, Ops.OP_TAR_OUT)
                    .put("root", root)
                    .put("mode", "full")
                    .put("max_bytes", max)
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
            budget,
            copiesReady,
            copies,
            (c, t) ->
                c.sandbox()
                    .channel()
                    .call(
                        Json.object()
                            .put(Ops.OP, Ops.OP_TAR_IN)
                            .put("root", root)
                            .put("path", "")
                            .put("strict", false)
                            .put("max_bytes", max)
                            .put("max_entries", 100_000)
                            .put("last", true)
                            .put("bulk", t),
                        new byte[0],
                        f -> {}));
    Frame f = sb.channel().await(done, STATE_TIMEOUT, "copy " + root + " out");
    if (f.ev().equals(Ops.EV_ERROR)) {
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
      StateBudget budget,
      BooleanSupplier copiesReady,
      Supplier<List<Copy>> copies,
      BiFunction<Copy, String, CompletableFuture<Frame>> startCopy) {
    long deadline = System.nanoTime() + STATE_TIMEOUT.toNanos();
    SocketChannel from = link.accept(token, deadline, parent::isDone);
    if (from == null) {
      return -1;
    }
    StateRelay relay = new StateRelay(what, from, framed, budget, StateRelay.BUFFER);
    ScheduledFuture<?> watchdog =
        WATCHDOG.schedule(relay::close, STATE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    try {
      relay.run(copiesReady, copies, startCopy, deadline);
      return relay.relayed();
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
   * Replaces session {@code name}'s namespace in {@code target} with {@code size} saved bytes read
   * from {@code in}, sent in chunks as they are read.
   */
  static void loadSession(
      SandboxContext target, String name, long extraBytes, InputStream in, long size)
      throws IOException {
    AgentChannel ch = target.channel();
    long id = ch.newId();
    CompletableFuture<Frame> done = ch.register(id, f -> {});
    byte[] buf = new byte[DefaultSandboxFiles.CHUNK];
    long sent = 0;
    do {
      int n = in.readNBytes(buf, 0, (int) Math.min(buf.length, size - sent));
      if (n <= 0 && size > 0) {
        throw new EOFException("a saved session ended " + (size - sent) + " bytes early");
      }
      boolean last = sent + n >= size;
      ObjectNode h = Json.object().put(Ops.OP, Ops.OP_PY_LOAD).put("id", id).put("last", last);
      if (sent == 0) {
        h.put("session", name).put("extra_bytes", extraBytes);
      }
      ch.send(h, Arrays.copyOf(buf, n));
      sent += n;
    } while (sent < size && !done.isDone());
    Frame f = ch.await(done, STATE_TIMEOUT, "restore session " + name);
    if (f.ev().equals(Ops.EV_ERROR)) {
      throw target.agentError(f.header());
    }
  }

  /** Replaces session {@code name}'s namespace in {@code target} with a saved one. */
  public static void loadSession(SandboxContext target, String name, long extraBytes, byte[] data) {
    AgentChannel ch = target.channel();
    long id = ch.newId();
    CompletableFuture<Frame> done = ch.register(id, f -> {});
    ch.sendChunks(
        Ops.OP_PY_LOAD,
        id,
        Json.object().put("session", name).put("extra_bytes", extraBytes),
        data,
        DefaultSandboxFiles.CHUNK,
        done);
    Frame f = ch.await(done, STATE_TIMEOUT, "restore session " + name);
    if (f.ev().equals(Ops.EV_ERROR)) {
      throw target.agentError(f.header());
    }
  }

  /** A session name as it may travel in a request and a manifest. */
  public static boolean validSessionName(String name) {
    return name.matches("[A-Za-z0-9_.-]{1,64}");
  }
}
