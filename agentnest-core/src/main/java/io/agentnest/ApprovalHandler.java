package io.agentnest;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * Decides about an action a sandbox's policy neither allows nor denies outright, e.g. a network
 * destination that is not on the allowlist when the {@link NetworkPolicy} is in {@link
 * NetworkPolicy.Mode#ASK} mode. The caller waits at most the policy's approval timeout; no answer
 * in time, an exceptional completion or a {@code null} decision all deny.
 *
 * <pre>{@code
 * ApprovalHandler handler = request -> CompletableFuture.supplyAsync(() ->
 *     askUser("Allow " + request.target() + "?")
 *         ? ApprovalDecision.allow("user approved")
 *         : ApprovalDecision.deny("user refused"));
 * }</pre>
 *
 * <p>{@link #decide} may be called concurrently from several threads, and should return quickly
 * (complete the stage later); it is called on a thread of its own, so blocking in it only delays
 * that one decision. Remember decisions yourself if the same target should not be asked again.
 */
@FunctionalInterface
public interface ApprovalHandler {
  CompletionStage<ApprovalDecision> decide(ApprovalRequest request);

  /** Denies every request (what happens without a handler). */
  static ApprovalHandler denyAll() {
    return request ->
        CompletableFuture.completedFuture(
            new ApprovalDecision(false, "denied by the deny-all approval handler", "denyAll"));
  }

  /**
   * Allows every request and hands it to {@code recorder} first (the audit log records every
   * request and decision anyway): for watching what an agent would ask before enforcing rules.
   */
  static ApprovalHandler allowAndRecord(Consumer<ApprovalRequest> recorder) {
    Objects.requireNonNull(recorder, "recorder");
    return request -> {
      recorder.accept(request);
      return CompletableFuture.completedFuture(
          new ApprovalDecision(true, "allowed and recorded", "allowAndRecord"));
    };
  }

  /** Allows every request: for tests and trusted, interactive use only. */
  static ApprovalHandler allowAll() {
    return request ->
        CompletableFuture.completedFuture(
            new ApprovalDecision(true, "allowed by the allow-all approval handler", "allowAll"));
  }
}
