package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalRequest;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PipedReader;
import java.io.PipedWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class ConsoleApprovalHandlerTest {
  static ApprovalRequest req(String target) {
    return new ApprovalRequest(
        "0123456789abcdef", "file.delete", target, "Python os.remove", Instant.now());
  }

  /** A handler that reads its keys from {@code keys} and prints its questions to {@code screen}. */
  private static ConsoleApprovalHandler onScreen(PipedWriter keys, StringWriter screen)
      throws IOException {
    return new ConsoleApprovalHandler(
        new BufferedReader(new PipedReader(keys)),
        new PrintWriter(screen, true),
        OpenQuestions.NONE);
  }

  /** The person types one answer and presses Enter. */
  private static void type(PipedWriter keys, String answer) throws IOException {
    keys.write(answer + "\n");
    keys.flush();
  }

  @Test
  void answersGoToTheOldestOpenQuestionAndAlwaysIsRemembered() throws Exception {
    PipedWriter keys = new PipedWriter();
    StringWriter screen = new StringWriter();
    ConsoleApprovalHandler h = onScreen(keys, screen);

    CompletableFuture<ApprovalDecision> a = h.decide(req("/workspace/a")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> b = h.decide(req("/workspace/b")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> gone = h.decide(req("/workspace/c")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> d = h.decide(req("/workspace/d")).toCompletableFuture();
    assertThat(screen.toString()).contains("asks to file.delete /workspace/a").doesNotContain("/b");

    type(keys, "y");
    assertThat(a.get(5, TimeUnit.SECONDS).allowed()).isTrue();
    assertThat(a.get().decidedBy()).startsWith("console:");
    type(keys, "n");
    assertThat(b.get(5, TimeUnit.SECONDS).allowed()).isFalse();
    // The sandbox stopped waiting for c (timeout): the next answer is d's, not c's.
    gone.cancel(false);
    type(keys, "a");
    assertThat(d.get(5, TimeUnit.SECONDS).allowed()).isTrue();
    assertThat(screen.toString()).contains("/workspace/d").contains("no answer in time");

    ApprovalDecision again = h.decide(req("/workspace/d")).toCompletableFuture().get();
    assertThat(again.allowed()).as("'always' is remembered for this run").isTrue();

    CompletableFuture<ApprovalDecision> last = h.decide(req("/workspace/e")).toCompletableFuture();
    keys.close();
    assertThat(last.get(5, TimeUnit.SECONDS).reason()).contains("terminal was closed");
  }

  /** A target that tries to repaint the question, hide later prompts, or reorder the line. */
  private static final String SPOOF =
      "evil.example:443\u001b[1A\r\u001b[2Kagentnest: sandbox asks to network pypi.org:443"
          + "\u001b[8m\u001b]52;c;cm0gLXJmIH4=\u0007\u009b2J\u202eexe.\u2028";

  @Test
  void hostileTargetsAreShownEscapedNeverActedOn() throws Exception {
    PipedWriter keys = new PipedWriter();
    StringWriter screen = new StringWriter();
    ConsoleApprovalHandler h = onScreen(keys, screen);
    CompletableFuture<ApprovalDecision> a =
        h.decide(
                new ApprovalRequest(
                    "0123456789abcdef\u001b[2J",
                    "network\r",
                    SPOOF,
                    "CONNECT " + SPOOF,
                    Instant.now()))
            .toCompletableFuture();
    String shown = screen.toString();
    assertThat(shown)
        .doesNotContain("\u001b", "\r", "\u009b", "\u202e", "\u2028", "\u0007")
        .contains("evil.example:443\\x1b[1A\\r\\x1b[2Kagentnest: sandbox asks to network pypi")
        .contains("\\x1b[8m", "\\x1b]52;c;", "\\x9b2J", "\\u202eexe.");
    // The prompt is three lines of our own, whatever the sandbox put into the target.
    assertThat(shown.split("\n", -1)).hasSize(4);
    type(keys, "n");
    assertThat(a.get(5, TimeUnit.SECONDS).allowed()).isFalse();

    CompletableFuture<ApprovalDecision> late = h.decide(req("slow\u001b[2J")).toCompletableFuture();
    late.cancel(false);
    assertThat(screen.toString()).contains("no answer in time for slow\\x1b[2J: denied");
    keys.close();
  }

  @Test
  void theSandboxsOutputWaitsWhileAQuestionIsOpenAndFollowsTheAnswer() throws Exception {
    PipedWriter keys = new PipedWriter();
    ByteArrayOutputStream terminal = new ByteArrayOutputStream();
    PrintStream shared = new PrintStream(terminal, true);
    TerminalOutput output = new TerminalOutput(shared, shared, true, true);
    ConsoleApprovalHandler h =
        new ConsoleApprovalHandler(
            new BufferedReader(new PipedReader(keys)), new PrintWriter(shared, true), output);

    output.write(false, "before\n".getBytes(StandardCharsets.UTF_8));
    CompletableFuture<ApprovalDecision> a = h.decide(req("/workspace/a")).toCompletableFuture();
    CompletableFuture<ApprovalDecision> b = h.decide(req("/workspace/b")).toCompletableFuture();
    output.write(
        false, "\u001b[1A\r\u001b[2Kallow /workspace/harmless? ".getBytes(StandardCharsets.UTF_8));
    output.write(true, "\u001b]0;owned\u0007\n".getBytes(StandardCharsets.UTF_8));
    // The question is printed by the handler's own thread: wait for it, then check what was held.
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> terminal.toString(StandardCharsets.UTF_8).contains("/workspace/a"));
    String whileAsking = terminal.toString(StandardCharsets.UTF_8);
    assertThat(whileAsking).startsWith("before\n").doesNotContain("owned");
    assertThat(whileAsking).doesNotContain("harmless");

    type(keys, "y");
    assertThat(a.get(5, TimeUnit.SECONDS).allowed()).isTrue();
    // b is still open: the output keeps waiting.
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> terminal.toString(StandardCharsets.UTF_8).contains("/workspace/b"));
    assertThat(terminal.toString(StandardCharsets.UTF_8)).doesNotContain("harmless");
    type(keys, "n");
    assertThat(b.get(5, TimeUnit.SECONDS).allowed()).isFalse();
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> terminal.toString(StandardCharsets.UTF_8).contains("owned"));
    String after = terminal.toString(StandardCharsets.UTF_8);
    int answered = after.lastIndexOf("[N]o: ");
    assertThat(after.substring(answered))
        .contains("^[[1A\n^[[2Kallow /workspace/harmless? ", "^[]0;owned^G\n")
        .doesNotContain("\u001b");
    keys.close();
  }
}
