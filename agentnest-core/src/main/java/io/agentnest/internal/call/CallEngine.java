package io.agentnest.internal.call;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ConfigException;
import io.agentnest.ExecEvent.Finished;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.FileOperationException;
import io.agentnest.FileOperationException.Reason;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.approval.ApprovalGate;
import io.agentnest.internal.approval.PythonAsks;
import io.agentnest.internal.approval.PythonGuard;
import io.agentnest.internal.approval.ShellClassifier;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The calls of one sandbox (commands and Python code): the approval a shell command needs before it
 * starts, the timeout and output cap put into the request, the host's own deadline (the timeout
 * plus {@link CallClock#ANSWER_MARGIN}, paused while a Python question waits for a person), the
 * collection of the streamed output, cancel and the {@code exec.*} audit records.
 *
 * <p>The host decides every bound here from its own clock and counts; the agent's answer only fills
 * the result. The approval itself is the {@link ApprovalGate}'s to decide.
 */
public final class CallEngine {
  private static final Logger LOG = LoggerFactory.getLogger(CallEngine.class);

  private final String sandboxId;
  private final SandboxConfig config;
  private final AgentChannel channel;
  private final Redactor redactor;
  private final ApprovalGate gate;
  private final PythonGuard pythonGuard;
  private final PythonAsks asks;
  private final Budget.Recorder audit;
  private final Runnable checkUsable;
  private final Duration answerMargin;

  /**
   * {@code checkUsable} throws when the sandbox is destroyed or expired; {@code audit} takes the
   * {@code exec.*} records.
   */
  public CallEngine(
      String sandboxId,
      SandboxConfig config,
      AgentChannel channel,
      Redactor redactor,
      ApprovalGate gate,
      PythonGuard pythonGuard,
      PythonAsks asks,
      Budget.Recorder audit,
      Runnable checkUsable) {
    this(
        sandboxId,
        config,
        channel,
        redactor,
        gate,
        pythonGuard,
        asks,
        audit,
        checkUsable,
        CallClock.ANSWER_MARGIN);
  }

  /** {@code answerMargin}: a test's own margin, so that a silent agent is caught soon. */
  CallEngine(
      String sandboxId,
      SandboxConfig config,
      AgentChannel channel,
      Redactor redactor,
      ApprovalGate gate,
      PythonGuard pythonGuard,
      PythonAsks asks,
      Budget.Recorder audit,
      Runnable checkUsable,
      Duration answerMargin) {
    this.sandboxId = sandboxId;
    this.config = config;
    this.channel = channel;
    this.redactor = redactor;
    this.gate = gate;
    this.pythonGuard = pythonGuard;
    this.asks = asks;
    this.audit = audit;
    this.checkUsable = checkUsable;
    this.answerMargin = answerMargin;
  }

  /** An exec request for a shell command line. */
  public static ObjectNode shellRequest(String command) {
    return Json.object().put(Ops.OP, Ops.OP_EXEC).put("cmd", command);
  }

  /** An exec request for a program with explicit arguments, no shell involved. */
  public static ObjectNode argvRequest(List<String> argv) {
    if (argv.isEmpty()) {
      throw new ConfigException("argv is empty: give at least the program to run");
    }
    ObjectNode h = Json.object().put(Ops.OP, Ops.OP_EXEC);
    argv.forEach(h.putArray("argv")::add);
    return h;
  }

  /** A request of a Python session (its code is the payload). */
  public static ObjectNode pythonRequest(String session) {
    return Json.object().put(Ops.OP, Ops.OP_PY).put("session", session);
  }

  /** Runs a call to its end: approved first (a shell command), then bounded by its deadline. */
  public ExecResult run(ObjectNode h, byte[] payload, ExecOptions options, boolean python) {
    if (!python) {
      checkUsable.run();
      ShellClassifier.Verdict v = shellVerdict(h);
      gate.require(v.kind(), commandText(h), "shell command", v.action(), v.reason());
    }
    Call c = begin(h, payload, options, python, null);
    try {
      Frame f = channel.await(c.done, c.clock::deadlineNanos, h.path(Ops.OP).asText());
      if (f.ev().equals(Ops.EV_ERROR)) {
        throw agentError(f.header());
      }
      ExecResult r = c.collector.toResult(f.header(), python);
      auditFinished(c, r, f.header());
      return r;
    } catch (RuntimeException e) {
      auditFailed(c.id, e);
      throw e;
    }
  }

  /** Starts a call whose events stream into an {@link io.agentnest.Execution}. */
  public DefaultExecution start(ObjectNode h, byte[] payload, ExecOptions options, boolean python) {
    DefaultExecution ex = new DefaultExecution(options.streamBuffer(), options.backpressure());
    if (python) {
      startInto(ex, h, payload, options, true);
      return ex;
    }
    checkUsable.run();
    ShellClassifier.Verdict v = shellVerdict(h);
    if (v.action() == ApprovalPolicy.Action.ALLOW) {
      startInto(ex, h, payload, options, false);
      return ex;
    }
    String cmd = commandText(h);
    // The caller gets its Execution at once; the command starts when (and if) it is approved.
    gate.decide(v.kind(), cmd, "shell command", v.action(), v.reason())
        .whenComplete(
            (d, err) -> {
              if (ex.result().isDone()) {
                return;
              }
              if (d == null || !d.allowed()) {
                ex.fail(
                    ApprovalGate.denial(
                        v.kind(),
                        cmd,
                        v.reason(),
                        d != null
                            ? d
                            : new ApprovalDecision(false, "approval failed: " + err, "error")));
                return;
              }
              try {
                startInto(ex, h, payload, options, false);
              } catch (RuntimeException e) {
                ex.fail(e);
              }
            });
    return ex;
  }

  /** A request of no call (a session's close): refused once the sandbox is gone. */
  public Frame request(ObjectNode h, Duration timeout) {
    checkUsable.run();
    return channel.request(h, new byte[0], timeout);
  }

  /** An error reply of the agent, with secrets masked: error text leaves the sandbox too. */
  public AgentNestException agentError(JsonNode h) {
    String code = Bounded.text(h.path("code").asText("AGENT"), 64);
    String msg =
        redactor.redact(Bounded.text(h.path("message").asText("(no message)"), 4096), (r, n) -> {});
    if (code.equals("BAD_PATH")) {
      return new FileOperationException(Reason.BAD_PATH, msg);
    }
    return new AgentNestException("sandbox agent error " + code + ": " + msg);
  }

  /** A started call: its final frame's future, the collector of its output, its clock. */
  private record Call(
      long id, CompletableFuture<Frame> done, OutputCollector collector, CallClock clock) {}

  private Call begin(
      ObjectNode h,
      byte[] payload,
      ExecOptions options,
      boolean python,
      @Nullable DefaultExecution events) {
    checkUsable.run();
    Duration timeout = options.timeout() != null ? options.timeout() : config.execTimeout();
    long maxOut =
        options.maxOutputBytes() != null ? options.maxOutputBytes() : config.maxOutputBytes();
    h.put("timeout_ms", Math.max(1, timeout.toMillis())).put("max_output", maxOut);
    if (!python) {
      h.put("cwd", options.workdir() != null ? options.workdir() : config.workdir());
      if (!options.env().isEmpty()) {
        ObjectNode env = h.putObject("env");
        options.env().forEach(env::put);
      }
    }
    CallClock clock =
        new CallClock(timeout, config.approvals().timeout(), answerMargin, System::nanoTime);
    ObjectNode watch = python ? pythonGuard.watch() : null;
    if (watch != null) {
      h.set("watch", watch);
      h.put("approval_timeout_ms", config.approvals().timeout().toMillis());
    }
    OutputCollector collector = new OutputCollector(maxOut, options.onOutput(), redactor, events);
    long callId = channel.newId();
    PythonAsks.Call questions = asks.forCall(callId, clock);
    Consumer<Frame> frames =
        watch == null
            ? collector
            : fr -> {
              if (fr.ev().equals(Ops.EV_ASK)) {
                questions.onAsk(fr);
              } else {
                collector.accept(fr);
              }
            };
    h.put("id", callId);
    auditStarted(h, payload, callId);
    CompletableFuture<Frame> done = channel.callWithId(h, payload, frames);
    return new Call(callId, done, collector, clock);
  }

  private void startInto(
      DefaultExecution ex, ObjectNode h, byte[] payload, ExecOptions options, boolean python) {
    Call c = begin(h, payload, options, python, ex);
    ex.onCancel(() -> signal(c.id, "CANCELLED"));
    ex.started(c.id);
    withDeadline(c.done, c.clock)
        .whenComplete(
            (f, err) -> {
              if (err != null) {
                Throwable cause =
                    err instanceof TimeoutException
                        ? new AgentNestException(
                            "the agent of sandbox "
                                + sandboxId
                                + " did not answer within its timeout plus "
                                + answerMargin.toMillis()
                                + " ms; the sandbox may be overloaded or stuck")
                        : err;
                channel.abandon(c.id);
                auditFailed(c.id, cause);
                ex.fail(cause);
                return;
              }
              if (f.ev().equals(Ops.EV_ERROR)) {
                RuntimeException failed = agentError(f.header());
                auditFailed(c.id, failed);
                ex.fail(failed);
                return;
              }
              try {
                ExecResult r = c.collector.toResult(f.header(), python);
                // A streamed call ends in the trail as a run() does: its exit, limit, redactions.
                auditFinished(c, r, f.header());
                ex.accept(new Finished(r));
              } catch (RuntimeException e) {
                auditFailed(c.id, e);
                ex.fail(e);
              }
            });
  }

  /** {@code done}, or a timeout once the call's clock runs out (re-read as approvals pause it). */
  private static CompletableFuture<Frame> withDeadline(
      CompletableFuture<Frame> done, CallClock clock) {
    CompletableFuture<Frame> out = new CompletableFuture<>();
    done.whenComplete(
        (f, e) -> {
          if (e != null) {
            out.completeExceptionally(e);
          } else {
            out.complete(f);
          }
        });
    checkDeadline(out, clock);
    return out;
  }

  private static void checkDeadline(CompletableFuture<Frame> out, CallClock clock) {
    if (out.isDone()) {
      return;
    }
    long wait = clock.deadlineNanos() - clock.now();
    if (wait <= 0) {
      out.completeExceptionally(new TimeoutException());
      return;
    }
    CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS)
        .execute(() -> checkDeadline(out, clock));
  }

  /** Asks the agent to stop a running call; best effort, never blocks the caller long. */
  private void signal(long callId, String limit) {
    if (!channel.isAlive()) {
      return;
    }
    try {
      channel.call(
          Json.object().put(Ops.OP, Ops.OP_SIGNAL).put("target", callId).put("limit", limit),
          new byte[0],
          f -> {});
    } catch (RuntimeException e) {
      LOG.debug("could not signal call {} of {}", callId, sandboxId, e);
    }
  }

  /** What the approval policy says about a shell (or argv) request. */
  private ShellClassifier.Verdict shellVerdict(ObjectNode h) {
    return ShellClassifier.classify(commandText(h), config.approvals());
  }

  private static String commandText(ObjectNode h) {
    if (h.has("argv")) {
      List<String> words = new ArrayList<>();
      h.path("argv").forEach(a -> words.add(shellQuote(a.asText())));
      return String.join(" ", words);
    }
    return h.path("cmd").asText();
  }

  private static String shellQuote(String word) {
    return word.matches("[A-Za-z0-9_./:=@%+,-]+") ? word : "'" + word.replace("'", "'\\''") + "'";
  }

  private void auditStarted(ObjectNode h, byte[] payload, long callId) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("call", callId);
    String op = h.path(Ops.OP).asText();
    if (op.equals(Ops.OP_PY)) {
      d.put("kind", "python");
      d.put("session", h.path("session").asText("default"));
      d.put(
          "code",
          redactor.redact(
              Bounded.text(new String(payload, StandardCharsets.UTF_8), 4096), (r, n) -> {}));
    } else {
      d.put("kind", "shell");
      String cmd = h.has("argv") ? h.path("argv").toString() : h.path("cmd").asText();
      d.put("command", redactor.redact(Bounded.text(cmd, 4096), (r, n) -> {}));
      d.put("cwd", h.path("cwd").asText());
    }
    d.put("timeout_ms", h.path("timeout_ms").asLong());
    audit.record("exec.started", d);
  }

  private void auditFailed(long callId, @Nullable Throwable failure) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("call", callId);
    d.put(
        "error",
        failure == null
            ? "unknown"
            : redactor.redact(String.valueOf(failure.getMessage()), (x, n) -> {}));
    audit.record("exec.finished", d);
  }

  private void auditFinished(Call c, ExecResult r, JsonNode res) {
    audit.record("exec.finished", ExecFinishedAudit.finished(c.id, r, res, c.clock.elapsed()));
    if (r.limit() != null) {
      audit.record("limit.hit", ExecFinishedAudit.limitHit(c.id, r, res));
    }
    if (!r.redactions().isEmpty()) {
      audit.record("secret.redacted", Map.of("call", c.id, "rules", r.redactions()));
    }
  }
}
