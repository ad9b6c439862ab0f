package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.ForkReport;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The state of a sandbox that fork and snapshots carry without a process checkpoint: its files
 * (workspace and scratch space, as tar streams) and each Python session's pickled namespace.
 */
public final class SandboxState {
  /** Bytes of one session's saved namespace, and what went into it. */
  public record Session(
      String name,
      byte[] data,
      long extraBytes,
      List<String> variables,
      List<ForkReport.Skipped> skipped) {}

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
  static final long MAX_STATE_BYTES = 2L << 30;
  private static final Duration STATE_TIMEOUT = Duration.ofMinutes(3);

  private SandboxState() {}

  /** Captures files and every live Python session of {@code sb}. */
  static Captured capture(DefaultSandbox sb, List<String> sessionNames) {
    SandboxArchives archives = sb.archives();
    ByteArrayOutputStream ws = new ByteArrayOutputStream(1 << 20);
    ByteArrayOutputStream tmp = new ByteArrayOutputStream(1 << 16);
    archives.tarOut(SandboxArchives.WORKSPACE, List.of(), false, MAX_FILES_BYTES, ws);
    archives.tarOut(SandboxArchives.TMP, List.of(), false, MAX_FILES_BYTES, tmp);
    List<Session> sessions = new ArrayList<>();
    for (String name : sessionNames) {
      Session s = dump(sb, name);
      if (s != null) {
        sessions.add(s);
      }
    }
    return new Captured(ws.toByteArray(), tmp.toByteArray(), sessions);
  }

  private static @org.jspecify.annotations.Nullable Session dump(DefaultSandbox sb, String name) {
    ByteArrayOutputStream buf = new ByteArrayOutputStream(1 << 16);
    boolean[] over = {false};
    AgentChannel ch = sb.channel();
    CompletableFuture<Frame> done =
        ch.call(
            Json.object().put("op", "py_dump").put("session", name),
            new byte[0],
            f -> {
              if (!f.ev().equals("data") || over[0]) {
                return;
              }
              if (buf.size() + (long) f.payload().length > MAX_STATE_BYTES) {
                over[0] = true;
                return;
              }
              buf.writeBytes(f.payload());
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
    List<ForkReport.Skipped> skipped = new ArrayList<>();
    if (h.hasNonNull("error")) {
      skipped.add(
          new ForkReport.Skipped(
              name, "*", "session", Bounded.text(h.path("error").asText(), 500)));
      return new Session(name, new byte[0], 0, List.of(), skipped);
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
    if (extra < 0 || extra > buf.size()) {
      throw new AgentNestException("session '" + name + "' sent a malformed state");
    }
    return new Session(name, buf.toByteArray(), extra, vars, skipped);
  }

  /** Puts a captured state into a fresh sandbox. */
  static void restore(DefaultSandbox target, Captured c) {
    SandboxArchives archives = target.archives();
    try {
      if (c.workspace().length > 0) {
        archives.tarIn(
            SandboxArchives.WORKSPACE,
            "",
            new ByteArrayInputStream(c.workspace()),
            false,
            MAX_FILES_BYTES);
      }
      if (c.tmp().length > 0) {
        archives.tarIn(
            SandboxArchives.TMP, "", new ByteArrayInputStream(c.tmp()), false, MAX_FILES_BYTES);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (Session s : c.sessions()) {
      if (s.data().length > 0) {
        load(target, s);
      }
    }
  }

  private static void load(DefaultSandbox target, Session s) {
    AgentChannel ch = target.channel();
    long id = ch.newId();
    CompletableFuture<Frame> done = ch.register(id, f -> {});
    ch.sendChunks(
        "py_load",
        id,
        Json.object().put("session", s.name()).put("extra_bytes", s.extraBytes()),
        s.data(),
        DefaultSandboxFiles.CHUNK,
        done);
    Frame f = ch.await(done, STATE_TIMEOUT, "restore session " + s.name());
    if (f.ev().equals("err")) {
      throw target.agentError(f.header());
    }
  }
}
