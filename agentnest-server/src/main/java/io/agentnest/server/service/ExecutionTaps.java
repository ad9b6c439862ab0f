package io.agentnest.server.service;

import io.agentnest.ExecResult;
import io.agentnest.OutputChunk;
import java.time.Clock;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The recent executions of each sandbox the server runs (its /v1 exec and code calls), with their
 * output as it is produced, for the web console's live view. Bounded everywhere: the last {@link
 * #RUNS} runs per sandbox, {@link #MAX_TEXT} characters of each command and {@link #MAX_OUTPUT} of
 * each run's output (the rest is counted, not kept). Output is the sandbox's: it is stored as text
 * and only ever shown escaped.
 */
public final class ExecutionTaps {
  static final int RUNS = 20;
  static final int MAX_TEXT = 2000;
  static final int MAX_OUTPUT = 64 * 1024;

  private final Map<String, Deque<Run>> bySandbox = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private final Clock clock;

  ExecutionTaps(Clock clock) {
    this.clock = clock;
  }

  /** One execution: what ran, its output so far, and how it ended. */
  public final class Run {
    public final long id = ids.incrementAndGet();
    final String kind;
    final String text;
    final String started = clock.instant().toString();
    private final StringBuilder output = new StringBuilder();
    private long dropped;
    private @Nullable String finished;
    private @Nullable String outcome;
    private long version;

    Run(String kind, String text) {
      this.kind = kind;
      this.text = text.length() <= MAX_TEXT ? text : text.substring(0, MAX_TEXT) + "…";
    }

    /** An {@code ExecOptions.onOutput} listener: cheap, it runs on the sandbox's reader. */
    public synchronized void output(OutputChunk chunk) {
      String s = chunk.text();
      int room = MAX_OUTPUT - output.length();
      if (room >= s.length()) {
        output.append(s);
      } else {
        output.append(s, 0, Math.max(0, room));
        dropped += s.length() - Math.max(0, room);
      }
      version++;
    }

    public synchronized void finish(@Nullable ExecResult r, @Nullable Throwable failed) {
      finished = clock.instant().toString();
      if (failed != null) {
        outcome = "failed: " + failed.getMessage();
      } else if (r != null) {
        outcome =
            r.error() != null
                ? r.error().name() + ": " + r.error().value()
                : r.limit() != null ? "stopped: " + r.limit() : "exit " + r.exitCode();
      }
      version++;
    }

    public synchronized long version() {
      return version;
    }

    public synchronized Map<String, Object> view() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("id", id);
      m.put("kind", kind);
      m.put("text", text);
      m.put("startedAt", started);
      m.put("finishedAt", finished);
      m.put("outcome", outcome);
      m.put("output", output.toString());
      m.put("droppedChars", dropped);
      return m;
    }
  }

  /** Records a new execution of {@code sandboxId}; the oldest beyond {@link #RUNS} goes. */
  public Run start(String sandboxId, String kind, String text) {
    Run r = new Run(kind, text);
    Deque<Run> runs = bySandbox.computeIfAbsent(sandboxId, k -> new ArrayDeque<>());
    synchronized (runs) {
      runs.addLast(r);
      while (runs.size() > RUNS) {
        runs.removeFirst();
      }
    }
    return r;
  }

  /** The sandbox's recent runs, oldest first. */
  public List<Run> runs(String sandboxId) {
    Deque<Run> runs = bySandbox.get(sandboxId);
    if (runs == null) {
      return List.of();
    }
    synchronized (runs) {
      return new ArrayList<>(runs);
    }
  }

  /** Forgets sandboxes the registry no longer holds. */
  void retain(Registry registry) {
    bySandbox.keySet().removeIf(id -> !registry.contains(id));
  }
}
