package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
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
    archives.tarOut(SandboxArchives.WORKSPACE, List.of(), false, MAX_FILES_BYTES, workspace);
    archives.tarOut(SandboxArchives.TMP, List.of(), false, MAX_FILES_BYTES, tmp);
  }

  /** Unpacks the tars (null: nothing to unpack) into a fresh sandbox's workspace and /tmp. */
  static void restoreFiles(
      DefaultSandbox target, @Nullable InputStream workspace, @Nullable InputStream tmp) {
    SandboxArchives archives = target.archives();
    try {
      if (workspace != null) {
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
    long[] got = {0};
    boolean[] over = {false};
    IOException[] failed = {null};
    AgentChannel ch = sb.channel();
    CompletableFuture<Frame> done =
        ch.call(
            Json.object().put("op", "py_dump").put("session", name),
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
    Frame f = ch.await(done, STATE_TIMEOUT, "save session " + name);
    if (f.ev().equals("err")) {
      throw sb.agentError(f.header());
    }
    JsonNode h = f.header();
    if (!h.path("present").asBoolean()) {
      return null;
    }
    if (over[0]) {
      throw new AgentNestException(
          "session '" + name + "' holds more than " + MAX_STATE_BYTES + " bytes of state");
    }
    if (failed[0] != null) {
      throw new AgentNestException(
          "saving session '" + name + "' failed: " + failed[0].getMessage(), failed[0]);
    }
    List<ForkReport.Skipped> skipped = new ArrayList<>();
    if (h.hasNonNull("error")) {
      skipped.add(
          new ForkReport.Skipped(
              name, "*", "session", Bounded.text(h.path("error").asText(), 500)));
      return new Dumped(name, 0, 0, List.of(), skipped, true);
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
    if (extra < 0 || extra > got[0]) {
      throw new AgentNestException("session '" + name + "' sent a malformed state");
    }
    return new Dumped(name, got[0], extra, vars, skipped, false);
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
