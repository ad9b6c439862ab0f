package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class ApprovalQueueTest {
  static ApprovalRequest request(String target) {
    return new ApprovalRequest("sb1", "file.delete", target, "rm", Instant.now());
  }

  @Test
  void requestWaitsUntilAnotherInterfaceAnswersIt() {
    ApprovalQueue q = new ApprovalQueue();
    List<ApprovalQueue.Pending> notified = new ArrayList<>();
    q.onRequest(notified::add);
    CompletableFuture<ApprovalDecision> a = q.decide(request("/workspace/a")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> b = q.decide(request("/workspace/b")).toCompletableFuture();

    assertThat(q.pending())
        .extracting(p -> p.request().target())
        .containsExactly("/workspace/a", "/workspace/b");
    assertThat(notified).hasSize(2);
    assertThat(a).isNotDone();

    long idB = q.pending().get(1).id();
    assertThat(q.deny(idB, "alice", "keep b")).isTrue();
    assertThat(b.join()).isEqualTo(new ApprovalDecision(false, "keep b", "alice"));
    assertThat(q.approve(q.pending().get(0).id(), "bob", "fine")).isTrue();
    assertThat(a.join().allowed()).isTrue();
    assertThat(a.join().decidedBy()).isEqualTo("bob");
    assertThat(q.pending()).isEmpty();
    assertThat(q.approve(idB, "late", "too late")).isFalse();
  }

  @Test
  void cancelledRequestLeavesTheQueue() {
    ApprovalQueue q = new ApprovalQueue();
    CompletableFuture<ApprovalDecision> a = q.decide(request("/workspace/a")).toCompletableFuture();
    a.cancel(false);
    assertThat(q.pending()).isEmpty();
  }

  @Test
  void fullQueueDeniesAtOnceAndSaysWhy() {
    ApprovalQueue q = new ApprovalQueue(1);
    q.decide(request("/workspace/a"));
    ApprovalDecision d = q.decide(request("/workspace/b")).toCompletableFuture().join();
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).contains("full");
  }

  @Test
  void expireDeniesOldRequests() {
    ApprovalQueue q = new ApprovalQueue();
    CompletableFuture<ApprovalDecision> a = q.decide(request("/workspace/a")).toCompletableFuture();
    assertThat(q.expire(Duration.ofHours(1))).isZero();
    assertThat(q.expire(Duration.ofMillis(-1))).isEqualTo(1);
    assertThat(a.join().allowed()).isFalse();
  }
}
