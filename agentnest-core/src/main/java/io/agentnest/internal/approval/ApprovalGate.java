package io.agentnest.internal.approval;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.ApprovalRequest;
import io.agentnest.internal.support.Bounded;
import io.agentnest.spi.support.DaemonThreads;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Turns a rule's action into a decision: ALLOW passes, DENY refuses, ASK waits for the approval
 * handler at most the timeout. Never fails: a broken handler, a timeout or a missing handler all
 * deny. Every request, decision and refusal is audited (who, when, why, how long it waited).
 */
public final class ApprovalGate {
  /**
   * Handlers may block; each decision gets a thread of its own, so one slow answer holds no other.
   */
  private static final ExecutorService HANDLER_THREADS = DaemonThreads.pool("agentnest-approval");

  private final String sandboxId;
  private final @Nullable ApprovalHandler handler;
  private final Duration timeout;
  private final BiConsumer<String, Map<String, ?>> audit;

  public ApprovalGate(
      String sandboxId,
      @Nullable ApprovalHandler handler,
      Duration timeout,
      BiConsumer<String, Map<String, ?>> audit) {
    this.sandboxId = sandboxId;
    this.handler = handler;
    this.timeout = timeout;
    this.audit = audit;
  }

  Duration timeout() {
    return timeout;
  }

  /** Blocks until decided; throws {@link ApprovalDeniedException} when refused. */
  public void require(String kind, String target, String detail, Action action, String why) {
    ApprovalDecision d = decide(kind, target, detail, action, why).join();
    if (!d.allowed()) {
      throw denial(kind, target, why, d);
    }
  }

  /** The exception for a refused operation: the decision's reason and the rule that applied. */
  public static ApprovalDeniedException denial(
      String kind, String target, String why, ApprovalDecision d) {
    String reason =
        d.decidedBy().equals("policy")
            ? d.reason()
            : d.reason() + " (it needed approval: " + why + ")";
    return new ApprovalDeniedException(kind, Bounded.text(target, 1000), reason);
  }

  /** The decision for one operation; completes normally, always. */
  public CompletableFuture<ApprovalDecision> decide(
      String kind, String target, String detail, Action action, String why) {
    String t = Bounded.text(target, 1000);
    String d = Bounded.text(detail, 2000);
    switch (action) {
      case ALLOW:
        return CompletableFuture.completedFuture(
            new ApprovalDecision(true, "allowed by policy", "policy"));
      case DENY:
        {
          ApprovalDecision denied =
              new ApprovalDecision(false, "denied by policy: " + why, "policy");
          violation(kind, t, denied, 0);
          return CompletableFuture.completedFuture(denied);
        }
      default:
        return ask(kind, t, d, why);
    }
  }

  private CompletableFuture<ApprovalDecision> ask(
      String kind, String target, String detail, String why) {
    long t0 = System.nanoTime();
    Map<String, Object> req = new LinkedHashMap<>();
    req.put("kind", kind);
    req.put("target", target);
    req.put("detail", detail);
    req.put("rule", why);
    req.put("timeout_ms", timeout.toMillis());
    audit.accept("approval.requested", req);
    ApprovalHandler h = handler;
    CompletableFuture<ApprovalDecision> result;
    if (h == null) {
      result =
          CompletableFuture.completedFuture(
              new ApprovalDecision(
                  false,
                  "it needs approval ("
                      + why
                      + ") and no approval handler is configured: set"
                      + " SandboxConfig.approvalHandler(...), or use 'agentnest run --approve'",
                  "no-handler"));
    } else {
      ApprovalRequest request =
          new ApprovalRequest(sandboxId, kind, target, detail + " [" + why + "]", Instant.now());
      result = new CompletableFuture<>();
      CompletableFuture<ApprovalDecision> out = result;
      AtomicReference<@Nullable CompletionStage<ApprovalDecision>> asked = new AtomicReference<>();
      HANDLER_THREADS.execute(
          () -> {
            try {
              CompletionStage<ApprovalDecision> s = h.decide(request);
              asked.set(s);
              if (out.isDone()) {
                cancel(s);
              }
              if (s == null) {
                out.complete(deny("the approval handler returned no answer"));
                return;
              }
              s.whenComplete(
                  (dec, err) -> {
                    if (err != null) {
                      out.complete(deny("the approval handler failed: " + describe(err)));
                    } else if (dec == null) {
                      out.complete(deny("the approval handler returned no decision"));
                    } else {
                      out.complete(dec);
                    }
                  });
            } catch (RuntimeException e) {
              out.complete(deny("the approval handler failed: " + describe(e)));
            }
          });
      result =
          result
              .orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS)
              .exceptionally(
                  err -> {
                    // Tell the handler nobody waits any more (a queue drops the entry).
                    cancel(asked.get());
                    return err instanceof TimeoutException
                        ? new ApprovalDecision(
                            false, "no approval arrived within " + timeout, "timeout")
                        : deny("the approval handler failed: " + describe(err));
                  });
    }
    return result.thenApply(
        dec -> {
          long waited = (System.nanoTime() - t0) / 1_000_000;
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("kind", kind);
          m.put("target", target);
          m.put("allowed", dec.allowed());
          m.put("decision", dec.allowed() ? "approve" : "deny");
          m.put("reason", Bounded.text(dec.reason(), 1000));
          m.put("decided_by", Bounded.text(dec.decidedBy(), 200));
          m.put("waited_ms", waited);
          audit.accept("approval.decided", m);
          if (!dec.allowed()) {
            violation(kind, target, dec, waited);
          }
          return dec;
        });
  }

  private void violation(String kind, String target, ApprovalDecision d, long waitedMs) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("kind", kind);
    m.put("target", target);
    m.put("decision", "deny");
    m.put("reason", Bounded.text(d.reason(), 1000));
    m.put("decided_by", Bounded.text(d.decidedBy(), 200));
    m.put("waited_ms", waitedMs);
    audit.accept("policy.violation", m);
  }

  private static void cancel(@Nullable CompletionStage<ApprovalDecision> stage) {
    if (stage != null) {
      try {
        stage.toCompletableFuture().cancel(false);
      } catch (UnsupportedOperationException e) {
        // A minimal stage that cannot be cancelled: its answer is simply ignored.
      }
    }
  }

  private static ApprovalDecision deny(String reason) {
    return new ApprovalDecision(false, reason, "handler-error");
  }

  private static String describe(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    return c.getClass().getSimpleName() + (c.getMessage() == null ? "" : ": " + c.getMessage());
  }
}
