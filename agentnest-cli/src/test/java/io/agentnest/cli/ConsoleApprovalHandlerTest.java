package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalRequest;
import java.io.BufferedReader;
import java.io.PipedReader;
import java.io.PipedWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ConsoleApprovalHandlerTest {
  static ApprovalRequest req(String target) {
    return new ApprovalRequest(
        "0123456789abcdef", "file.delete", target, "Python os.remove", Instant.now());
  }

  @Test
  void answersGoToTheOldestOpenQuestionAndAlwaysIsRemembered() throws Exception {
    PipedWriter keys = new PipedWriter();
    StringWriter screen = new StringWriter();
    ConsoleApprovalHandler h =
        new ConsoleApprovalHandler(
            new BufferedReader(new PipedReader(keys)), new PrintWriter(screen, true));

    CompletableFuture<ApprovalDecision> a = h.decide(req("/workspace/a")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> b = h.decide(req("/workspace/b")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> gone = h.decide(req("/workspace/c")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> d = h.decide(req("/workspace/d")).toCompletableFuture();
    assertThat(screen.toString()).contains("asks to file.delete /workspace/a").doesNotContain("/b");

    keys.write("y\n");
    keys.flush();
    assertThat(a.get(5, TimeUnit.SECONDS).allowed()).isTrue();
    assertThat(a.get().decidedBy()).startsWith("console:");
    keys.write("n\n");
    keys.flush();
    assertThat(b.get(5, TimeUnit.SECONDS).allowed()).isFalse();
    // The sandbox stopped waiting for c (timeout): the next answer is d's, not c's.
    gone.cancel(false);
    keys.write("a\n");
    keys.flush();
    assertThat(d.get(5, TimeUnit.SECONDS).allowed()).isTrue();
    assertThat(screen.toString()).contains("/workspace/d").contains("no answer in time");

    ApprovalDecision again = h.decide(req("/workspace/d")).toCompletableFuture().get();
    assertThat(again.allowed()).as("'always' is remembered for this run").isTrue();

    CompletableFuture<ApprovalDecision> last = h.decide(req("/workspace/e")).toCompletableFuture();
    keys.close();
    assertThat(last.get(5, TimeUnit.SECONDS).reason()).contains("terminal was closed");
  }
}
