package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.OutputChunk;
import io.agentnest.Sandbox;
import io.agentnest.server.e2b.E2bConnect.Code;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.StreamThreads;
import io.agentnest.server.http.Wire;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * envd's process service for one sandbox: commands started through the SDK get a pid, run as
 * AgentNest executions (same policy, limits, audit and approvals as {@code exec}), and outlive the
 * stream that started them, as on E2B: a client that disconnects leaves the command running until
 * it ends, is killed, or hits its timeout; {@code Connect} re-attaches to its output from then on.
 * One pump per running command reads its events and hands them to every attached stream through a
 * bounded queue: a stream that falls that far behind is ended, never the command or the others.
 */
final class E2bProcesses {
  /** Commands one sandbox may have running at once through the E2B face. */
  static final int MAX_RUNNING = 32;

  /** Events buffered per attached stream before a stream too slow to keep up is ended. */
  static final int STREAM_QUEUE = 4096;

  private static final ObjectNode END = Wire.JSON.createObjectNode();

  private final Sandbox sandbox;
  private final ExecutorService pumps;
  private final AtomicInteger nextPid = new AtomicInteger(1000);
  private final Map<Integer, Proc> running = new ConcurrentHashMap<>();

  E2bProcesses(Sandbox sandbox, ExecutorService pumps) {
    this.sandbox = sandbox;
    this.pumps = pumps;
  }

  /** One command: its config as the client sent it, and the streams attached to it. */
  static final class Proc {
    final int pid;
    final @Nullable String tag;
    final ObjectNode config;
    final Execution execution;
    final List<BlockingQueue<ObjectNode>> listeners = new CopyOnWriteArrayList<>();
    volatile boolean done;

    Proc(int pid, @Nullable String tag, ObjectNode config, Execution execution) {
      this.pid = pid;
      this.tag = tag;
      this.config = config;
      this.execution = execution;
    }
  }

  /** What a started command runs: a shell command line or a program with arguments. */
  record Command(@Nullable String shell, List<String> argv) {}

  /**
   * Reads envd's ProcessConfig: {@code /bin/bash -l -c LINE} (what {@code commands.run} sends) runs
   * LINE as AgentNest's shell command; anything else runs as a program with arguments.
   */
  static Command command(JsonNode process) {
    String cmd = E2bWire.text(process, "cmd");
    if (cmd == null || cmd.isBlank()) {
      throw E2bConnect.error(Code.INVALID_ARGUMENT, "process.cmd is missing: name a program");
    }
    List<String> args = E2bWire.strings(process, "args");
    if ((cmd.equals("/bin/bash") || cmd.equals("bash") || cmd.equals("/bin/sh"))
        && !args.isEmpty()) {
      List<String> rest = new ArrayList<>(args);
      if (rest.get(0).equals("-l")) {
        rest.remove(0);
      }
      if (rest.size() == 2 && rest.get(0).equals("-c")) {
        return new Command(rest.get(1), List.of());
      }
    }
    List<String> argv = new ArrayList<>();
    argv.add(cmd);
    argv.addAll(args);
    return new Command(null, argv);
  }

  /**
   * Checks a StartRequest and reads what it runs: a process is required; a pseudo-terminal and
   * interactive stdin are refused.
   */
  static Command parse(ObjectNode request) {
    JsonNode process = request.get("process");
    if (process == null || !process.isObject()) {
      throw E2bConnect.error(
          Code.INVALID_ARGUMENT, "the request has no 'process': send {process: {cmd, args}}");
    }
    if (request.hasNonNull("pty")) {
      throw E2bConnect.error(
          Code.UNIMPLEMENTED,
          "pseudo-terminals are not served: AgentNest commands stream stdout and stderr; use"
              + " commands.run instead of pty.create");
    }
    if (request.path("stdin").asBoolean(false)) {
      throw E2bConnect.error(
          Code.UNIMPLEMENTED,
          "interactive stdin is not served: AgentNest commands read no stdin; pipe the input in"
              + " the command line (e.g. printf ... | cmd) or write it to a file first");
    }
    return command(process);
  }

  /**
   * Starts {@code c} (from {@link #parse} of {@code request}) and returns it; the caller attaches
   * its stream with {@link #attach}.
   */
  Proc start(ObjectNode request, Command c, ExecOptions options) {
    if (running.size() >= MAX_RUNNING) {
      throw E2bConnect.error(
          Code.RESOURCE_EXHAUSTED,
          "this sandbox already runs " + MAX_RUNNING + " commands: wait for one or kill one");
    }
    int pid = nextPid.getAndIncrement();
    Execution ex =
        c.shell() != null ? sandbox.start(c.shell(), options) : sandbox.start(c.argv(), options);
    Proc p =
        new Proc(
            pid,
            E2bWire.text(request, "tag"),
            ((ObjectNode) request.get("process")).deepCopy(),
            ex);
    running.put(pid, p);
    return p;
  }

  /** Begins moving a started command's events to its attached streams. */
  void pump(Proc p) {
    try {
      pumpOn(p);
    } catch (RejectedExecutionException full) {
      // Bounded (issue 42, LOW 11): the command is stopped rather than left without a reader.
      running.remove(p.pid);
      p.execution.cancel();
      throw E2bConnect.error(
          Code.RESOURCE_EXHAUSTED,
          "the server's "
              + StreamThreads.MAX_PUMPS
              + " command streams are all in use: retry shortly, or end commands you no longer"
              + " read");
    }
  }

  private void pumpOn(Proc p) {
    pumps.execute(
        () -> {
          try {
            Iterator<ExecEvent> it = p.execution.iterator();
            while (it.hasNext()) {
              ExecEvent ev = it.next();
              ObjectNode event = event(ev);
              if (event != null) {
                broadcast(p, event);
              }
            }
          } catch (RuntimeException e) {
            broadcast(p, end(-1, "the command failed: " + e.getMessage()));
          } finally {
            p.done = true;
            running.remove(p.pid);
            for (BlockingQueue<ObjectNode> q : p.listeners) {
              q.offer(END);
            }
          }
        });
  }

  private static void broadcast(Proc p, ObjectNode event) {
    for (BlockingQueue<ObjectNode> q : p.listeners) {
      if (!q.offer(event)) {
        // Too slow: end that stream (the client sees an error) and keep the command running.
        p.listeners.remove(q);
        q.clear();
        q.offer(END);
      }
    }
  }

  /** Attaches a new stream; its queue receives events from now on, then {@link #isEnd}. */
  BlockingQueue<ObjectNode> attach(Proc p) {
    BlockingQueue<ObjectNode> q = new ArrayBlockingQueue<>(STREAM_QUEUE);
    p.listeners.add(q);
    if (p.done) {
      q.offer(END);
    }
    return q;
  }

  void detach(Proc p, BlockingQueue<ObjectNode> q) {
    p.listeners.remove(q);
  }

  static boolean isEnd(ObjectNode n) {
    return n == END;
  }

  /** The running command selected by {@code {process: {pid: N}}} or {@code {process: {tag}}}. */
  Proc select(ObjectNode request) {
    JsonNode sel = request.path("process");
    JsonNode pid = sel.get("pid");
    JsonNode tag = sel.get("tag");
    if (pid != null && pid.canConvertToInt()) {
      Proc p = running.get(pid.asInt());
      if (p == null) {
        throw E2bConnect.error(
            Code.NOT_FOUND, "process " + pid.asInt() + " is not running in this sandbox");
      }
      return p;
    }
    if (tag != null && tag.isTextual()) {
      for (Proc p : running.values()) {
        if (tag.asText().equals(p.tag)) {
          return p;
        }
      }
      throw E2bConnect.error(
          Code.NOT_FOUND,
          "no process tagged '" + Escape.id(tag.asText()) + "' is running in this sandbox");
    }
    throw E2bConnect.error(
        Code.INVALID_ARGUMENT, "select a process: send {process: {pid: N}} or {process: {tag}}");
  }

  /** envd's ListResponse. */
  ObjectNode list() {
    ObjectNode out = Wire.JSON.createObjectNode();
    ArrayNode ps = out.putArray("processes");
    for (Proc p : running.values()) {
      ObjectNode info = ps.addObject();
      info.set("config", p.config);
      info.put("pid", p.pid);
      if (p.tag != null) {
        info.put("tag", p.tag);
      }
    }
    return out;
  }

  /** Stops a command (SIGKILL and SIGTERM both stop its process tree). */
  void signal(ObjectNode request) {
    Proc p = select(request);
    String signal = E2bWire.text(request, "signal");
    if (signal != null
        && !signal.equals("SIGNAL_SIGKILL")
        && !signal.equals("SIGNAL_SIGTERM")
        && !signal.equals("9")
        && !signal.equals("15")) {
      throw E2bConnect.error(
          Code.INVALID_ARGUMENT,
          "signal '"
              + Escape.id(signal)
              + "' is not served: send SIGNAL_SIGKILL or SIGNAL_SIGTERM");
    }
    p.execution.cancel();
  }

  void cancelAll() {
    for (Proc p : running.values()) {
      p.execution.cancel();
    }
  }

  static ObjectNode startEvent(int pid) {
    ObjectNode n = Wire.JSON.createObjectNode();
    n.putObject("event").putObject("start").put("pid", pid);
    return n;
  }

  static ObjectNode keepalive() {
    ObjectNode n = Wire.JSON.createObjectNode();
    n.putObject("event").putObject("keepalive");
    return n;
  }

  private static @Nullable ObjectNode event(ExecEvent ev) {
    if (ev instanceof ExecEvent.Output o) {
      ObjectNode n = Wire.JSON.createObjectNode();
      n.putObject("event")
          .putObject("data")
          .put(
              o.chunk().stream() == OutputChunk.Stream.STDOUT ? "stdout" : "stderr",
              Base64.getEncoder().encodeToString(o.chunk().data()));
      return n;
    }
    if (ev instanceof ExecEvent.Finished f) {
      ExecResult r = f.result();
      String error = null;
      if (r.limit() != null) {
        error = "stopped by AgentNest: limit " + r.limit().name().toLowerCase(Locale.ROOT);
      }
      return end(r.limit() != null && r.exitCode() == 0 ? -1 : r.exitCode(), error);
    }
    return null;
  }

  private static ObjectNode end(int exitCode, @Nullable String error) {
    ObjectNode n = Wire.JSON.createObjectNode();
    ObjectNode end = n.putObject("event").putObject("end");
    end.put("exitCode", exitCode);
    end.put("exited", true);
    end.put("status", "exit status " + exitCode);
    if (error != null) {
      end.put("error", error);
    }
    return n;
  }

  /** How long a command may run: the client's Connect deadline, bounded by {@code max}. */
  static Duration timeout(@Nullable String connectTimeoutMs, Duration max) {
    if (connectTimeoutMs == null || connectTimeoutMs.isBlank()) {
      return max;
    }
    long ms;
    try {
      ms = Long.parseLong(connectTimeoutMs.strip());
    } catch (NumberFormatException e) {
      throw E2bConnect.error(
          Code.INVALID_ARGUMENT,
          "Connect-Timeout-Ms '" + Escape.id(connectTimeoutMs) + "' is not a number of ms");
    }
    if (ms <= 0) {
      return max;
    }
    Duration d = Duration.ofMillis(ms);
    return d.compareTo(max) > 0 ? max : d;
  }

  /** Waits on a stream's queue; {@code null} after {@code keepaliveMs} without an event. */
  static @Nullable ObjectNode next(BlockingQueue<ObjectNode> q, long keepaliveMs)
      throws InterruptedException {
    return q.poll(keepaliveMs, TimeUnit.MILLISECONDS);
  }
}
