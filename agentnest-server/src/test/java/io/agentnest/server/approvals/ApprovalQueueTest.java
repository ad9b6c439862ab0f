package io.agentnest.server.approvals;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ApprovalQueueTest {
  private static ApprovalRequest ask(String sandbox) {
    return new ApprovalRequest(sandbox, "file_deletion", "x", "rm x", Instant.now());
  }

  private static CompletableFuture<ApprovalDecision> decide(ApprovalHandler h, String sandbox) {
    return h.decide(ask(sandbox)).toCompletableFuture();
  }

  @Test
  void aSandboxCannotGrowItsTenantsQueuePastTheBoundAndOtherTenantsAreUnaffected()
      throws Exception {
    ApprovalQueue q = new ApprovalQueue();
    ApprovalHandler a = q.handlerFor("a", Duration.ofMinutes(5));
    List<CompletableFuture<ApprovalDecision>> waiting = new ArrayList<>();
    for (int i = 0; i < ApprovalQueue.MAX_PENDING_PER_TENANT; i++) {
      waiting.add(decide(a, "sb-a"));
    }
    assertThat(waiting).noneMatch(CompletableFuture::isDone);
    ApprovalDecision over = decide(a, "sb-a").get(10, TimeUnit.SECONDS);
    assertThat(over.allowed()).isFalse();
    assertThat(over.reason()).contains("already waiting");
    assertThat(q.pending("a")).hasSize(ApprovalQueue.MAX_PENDING_PER_TENANT);

    CompletableFuture<ApprovalDecision> b =
        decide(q.handlerFor("b", Duration.ofMinutes(5)), "sb-b");
    assertThat(b).isNotDone();
    assertThat(q.pending("b")).hasSize(1);
    q.denyAll();
    assertThat(b.get(10, TimeUnit.SECONDS).allowed()).isFalse();
    assertThat(q.pending("a")).isEmpty();
  }

  @Test
  void aQuestionNobodyAnswersIsDeniedAtThePolicysTimeoutAndLeavesTheList() throws Exception {
    ApprovalQueue q = new ApprovalQueue();
    CompletableFuture<ApprovalDecision> f =
        decide(q.handlerFor("a", Duration.ofMillis(50)), "sb-a");
    ApprovalDecision d = f.get(30, TimeUnit.SECONDS);
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).contains("no decision within");
    assertThat(q.pending("a")).isEmpty();
  }

  @Test
  void anAnswerOnTheBoardReachesTheWaitingSandboxOnceAndOnlyFromItsTenant() throws Exception {
    LocalApprovalBoard board = new LocalApprovalBoard();
    ApprovalQueue q = new ApprovalQueue(board, Clock.systemUTC());
    CompletableFuture<ApprovalDecision> f =
        q.handlerFor("a", Duration.ofMinutes(5))
            .decide(new ApprovalRequest("sb-a", "file_deletion", "x\0y", "rm", Instant.now()))
            .toCompletableFuture();
    List<ApprovalBoard.Question> waiting = board.waiting("a", Instant.now());
    assertThat(waiting)
        .singleElement()
        .satisfies(w -> assertThat(w.target()).isEqualTo("x\uFFFDy"));
    assertThat(board.waiting("b", Instant.now())).isEmpty();
    String id = waiting.get(0).id();

    assertThat(board.answer(new ApprovalBoard.Answer(id, true, "ok", "api:b"), "b", Instant.now()))
        .isFalse();
    assertThat(f).isNotDone();
    assertThat(board.answer(new ApprovalBoard.Answer(id, true, "ok", "api:a"), "a", Instant.now()))
        .isTrue();
    ApprovalDecision d = f.get(10, TimeUnit.SECONDS);
    assertThat(d.allowed()).isTrue();
    assertThat(d.decidedBy()).isEqualTo("api:a");
    assertThat(board.answer(new ApprovalBoard.Answer(id, false, "no", "api:a"), "a", Instant.now()))
        .isFalse();
    assertThat(board.waiting(null, Instant.now())).isEmpty();
  }

  @Test
  void aQuestionThatTimesOutLeavesTheBoard() throws Exception {
    LocalApprovalBoard board = new LocalApprovalBoard();
    ApprovalQueue q = new ApprovalQueue(board, Clock.systemUTC());
    CompletableFuture<ApprovalDecision> f = decide(q.handlerFor("a", Duration.ofMillis(50)), "sb");
    assertThat(f.get(30, TimeUnit.SECONDS).allowed()).isFalse();
    // Withdrawn when the wait ended, so not even an admin finds it to answer.
    assertThat(board.waiting(null, Instant.now().minusSeconds(60))).isEmpty();
  }
}
