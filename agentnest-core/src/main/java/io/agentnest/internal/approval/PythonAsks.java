package io.agentnest.internal.approval;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Approval questions that a Python call's audit hook asks through the agent ({@code ask} frames):
 * decided on the host and answered. The agent caps them per call too, but anything in the sandbox
 * can send such frames, so the host enforces its own limits first: at most {@code perCall} per call
 * (one {@code limit.hit} record for the call, the rest denied unasked) and the sandbox's ask {@link
 * Budget} across calls.
 */
public final class PythonAsks {
  private static final Logger LOG = LoggerFactory.getLogger(PythonAsks.class);

  private final AgentChannel channel;
  private final ApprovalGate gate;
  private final PythonGuard guard;
  private final Redactor redactor;
  private final Budget budget;
  private final int perCall;
  private final Budget.Recorder audit;
  private final Runnable overBudget;

  public PythonAsks(
      AgentChannel channel,
      ApprovalGate gate,
      PythonGuard guard,
      Redactor redactor,
      Budget budget,
      int perCall,
      Budget.Recorder audit,
      Runnable overBudget) {
    this.channel = channel;
    this.gate = gate;
    this.guard = guard;
    this.redactor = redactor;
    this.budget = budget;
    this.perCall = perCall;
    this.audit = audit;
    this.overBudget = overBudget;
  }

  /** The questions of one call, counted against its own cap. */
  public Call forCall(long callId, AskClock clock) {
    return new Call(callId, clock);
  }

  public final class Call {
    private final long callId;
    private final AskClock clock;
    private final AtomicInteger asked = new AtomicInteger();
    private final AtomicBoolean capReported = new AtomicBoolean();

    private Call(long callId, AskClock clock) {
      this.callId = callId;
      this.clock = clock;
    }

    /** An {@code ask} frame of this call: decide it (or refuse it unasked) and answer the agent. */
    public void onAsk(Frame f) {
      JsonNode h = f.header();
      long ask = h.path("ask").asLong(-1);
      if (asked.incrementAndGet() > perCall) {
        if (capReported.compareAndSet(false, true)) {
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("call", callId);
          m.put("limit", "ASKS_PER_CALL");
          m.put("budget", perCall + " approval questions per call");
          audit.record("limit.hit", m);
        }
        answer(ask, false, "more than " + perCall + " approval questions in one call");
        return;
      }
      Budget.Decision d = budget.take();
      if (d != Budget.Decision.ADMIT) {
        answer(
            ask,
            false,
            "the sandbox asked more approval questions than its budget allows ("
                + budget.describe()
                + ")");
        if (d == Budget.Decision.DESTROY) {
          overBudget.run();
        }
        return;
      }
      String event = Bounded.text(h.path("event").asText(), 100);
      String target = redactor.redact(Bounded.text(h.path("target").asText(), 1000), (r, n) -> {});
      String detail = redactor.redact(Bounded.text(h.path("detail").asText(), 1000), (r, n) -> {});
      boolean cut = h.path("cut").asBoolean(false) || h.path("target").asText().length() > 1000;
      ShellClassifier.Verdict v =
          guard.classify(
              new PythonGuard.Report(event, target, cut, h.path("replaces").asBoolean(false)));
      long t0 = clock.askStarted();
      gate.decide(v.kind(), target, "Python " + detail, v.action(), v.reason())
          .whenComplete(
              (dec, err) -> {
                clock.askEnded(t0);
                boolean allowed = err == null && dec != null && dec.allowed();
                String reason = dec != null ? dec.reason() : "approval failed: " + err;
                answer(ask, allowed, reason);
              });
    }

    private void answer(long ask, boolean allowed, String reason) {
      if (!channel.isAlive()) {
        return;
      }
      try {
        // Sent, not called: the agent's acknowledgement is not needed, and a flood of questions
        // must not leave a pending call behind for each answer.
        channel.send(
            Json.object()
                .put(Ops.OP, Ops.OP_ANSWER)
                .put("id", channel.newId())
                .put("call", callId)
                .put("ask", ask)
                .put("allowed", allowed)
                .put("reason", Bounded.text(reason, 1000)),
            new byte[0]);
      } catch (RuntimeException e) {
        LOG.debug("could not answer approval {} of call {}", ask, callId, e);
      }
    }
  }
}
