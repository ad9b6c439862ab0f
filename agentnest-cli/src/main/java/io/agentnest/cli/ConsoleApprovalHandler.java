package io.agentnest.cli;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.text.HumanText;
import java.io.BufferedReader;
import java.io.Console;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Asks the person at the terminal, one question at a time: {@code y} allows, {@code a} allows this
 * kind and target for the rest of the run, anything else denies. One reader thread answers the
 * oldest open question; a question the sandbox stopped waiting for (timeout) is skipped, so a late
 * answer never lands on the wrong one.
 *
 * <p>Everything in a question that the sandbox chose (target, detail) is shown escaped ({@link
 * HumanText}), so it cannot repaint or hide the question; and {@link OpenQuestions} is told while
 * questions are open, so the sandbox's live output waits instead of printing over them.
 */
final class ConsoleApprovalHandler implements ApprovalHandler {
  private final BufferedReader in;
  private final PrintWriter out;
  private final String user;
  private final Deque<Question> open = new ArrayDeque<>();
  private final Set<String> always = ConcurrentHashMap.newKeySet();
  private final OpenQuestions questions;
  private boolean anyOpen;
  private @Nullable Thread reader;

  private record Question(ApprovalRequest request, CompletableFuture<ApprovalDecision> answer) {}

  ConsoleApprovalHandler(BufferedReader in, PrintWriter out, OpenQuestions questions) {
    this.in = in;
    this.out = out;
    this.questions = questions;
    this.user = "console:" + System.getProperty("user.name", "user");
  }

  /** The terminal's handler, or null when this process has no terminal. */
  static @Nullable ConsoleApprovalHandler onTerminal(OpenQuestions questions) {
    Console c = System.console();
    if (c == null) {
      return null;
    }
    return new ConsoleApprovalHandler(new BufferedReader(c.reader()), c.writer(), questions);
  }

  @Override
  public CompletionStage<ApprovalDecision> decide(ApprovalRequest request) {
    String key = request.kind() + "\u0000" + request.target();
    CompletableFuture<ApprovalDecision> answer = new CompletableFuture<>();
    if (always.contains(key)) {
      answer.complete(new ApprovalDecision(true, "allowed for this run at the terminal", user));
      return answer;
    }
    synchronized (this) {
      boolean first = open.stream().noneMatch(q -> !q.answer().isDone());
      open.addLast(new Question(request, answer));
      if (first) {
        // Quiet the sandbox's output before the question appears, not after.
        tellQuestions();
        prompt(request);
      }
      if (reader == null) {
        Thread t = new Thread(this::readAnswers, "agentnest-approval-console");
        t.setDaemon(true);
        reader = t;
        t.start();
      }
    }
    answer.whenComplete(
        (d, e) -> {
          if (e != null) {
            synchronized (this) {
              out.println(
                  "\nagentnest: no answer in time for "
                      + HumanText.line(request.target(), 300)
                      + ": denied");
              out.flush();
              promptNext();
              tellQuestions();
            }
          }
        });
    return answer;
  }

  private void prompt(ApprovalRequest r) {
    out.printf(
        "%nagentnest: sandbox %s asks to %s %s%n  %s%n  allow? [y]es / [a]lways / [N]o: ",
        HumanText.line(r.sandboxId(), 12),
        HumanText.line(r.kind(), 40),
        HumanText.line(r.target(), 300),
        HumanText.line(r.detail(), 500));
    out.flush();
  }

  /** Tells {@link OpenQuestions} when the first question opens and the last one closes; locked. */
  private void tellQuestions() {
    boolean now = open.stream().anyMatch(q -> !q.answer().isDone());
    if (now != anyOpen) {
      anyOpen = now;
      questions.changed(now);
    }
  }

  /** Drops answered and abandoned questions and shows the next open one; holds the lock. */
  private void promptNext() {
    while (!open.isEmpty() && open.peekFirst().answer().isDone()) {
      open.removeFirst();
    }
    Question q = open.peekFirst();
    if (q != null) {
      prompt(q.request());
    }
  }

  private void readAnswers() {
    while (true) {
      String line;
      try {
        line = in.readLine();
      } catch (IOException e) {
        line = null;
      }
      synchronized (this) {
        while (!open.isEmpty() && open.peekFirst().answer().isDone()) {
          open.removeFirst();
        }
        Question q = open.pollFirst();
        if (line == null) {
          // The terminal went away: deny what is open and whatever comes later.
          ApprovalDecision no = new ApprovalDecision(false, "the terminal was closed", user);
          if (q != null) {
            q.answer().complete(no);
          }
          open.forEach(x -> x.answer().complete(no));
          open.clear();
          tellQuestions();
          return;
        }
        if (q != null) {
          String a = line.strip().toLowerCase(Locale.ROOT);
          if (a.equals("a") || a.equals("always")) {
            always.add(q.request().kind() + "\u0000" + q.request().target());
            q.answer().complete(new ApprovalDecision(true, "allowed always at the terminal", user));
          } else if (a.equals("y") || a.equals("yes")) {
            q.answer().complete(new ApprovalDecision(true, "allowed at the terminal", user));
          } else {
            q.answer().complete(new ApprovalDecision(false, "refused at the terminal", user));
          }
          promptNext();
          tellQuestions();
        }
      }
    }
  }
}
