package io.agentnest;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * An {@link ApprovalHandler} that parks each request until another interface answers it: a REST
 * endpoint, a web console, an MCP client, a chat bot. Requests the sandbox stopped waiting for
 * (timeout) leave the queue by themselves.
 *
 * <pre>{@code
 * ApprovalQueue queue = new ApprovalQueue();
 * queue.onRequest(p -> notifyReviewer(p.id(), p.request()));
 * SandboxConfig config = SandboxConfig.builder().approvalHandler(queue).build();
 * // later, from the reviewer's interface:
 * queue.approve(id, "alice", "looks fine");
 * }</pre>
 */
public final class ApprovalQueue implements ApprovalHandler {
  /** A request waiting for an answer. */
  public record Pending(long id, ApprovalRequest request, Instant queuedAt) {}

  private final AtomicLong ids = new AtomicLong(1);
  private final Map<Long, Entry> pending = new ConcurrentHashMap<>();
  private final List<Consumer<Pending>> listeners = new CopyOnWriteArrayList<>();
  private final int capacity;

  private record Entry(Pending pending, CompletableFuture<ApprovalDecision> answer) {}

  /** A queue of at most 1,000 waiting requests; more are denied at once. */
  public ApprovalQueue() {
    this(1000);
  }

  public ApprovalQueue(int capacity) {
    if (capacity < 1) {
      throw new ConfigException("approval queue capacity must be at least 1, got " + capacity);
    }
    this.capacity = capacity;
  }

  @Override
  public CompletionStage<ApprovalDecision> decide(ApprovalRequest request) {
    CompletableFuture<ApprovalDecision> answer = new CompletableFuture<>();
    if (pending.size() >= capacity) {
      answer.complete(
          new ApprovalDecision(
              false,
              "the approval queue is full (" + capacity + " waiting): answer the waiting ones",
              "queue"));
      return answer;
    }
    long id = ids.getAndIncrement();
    Pending p = new Pending(id, request, Instant.now());
    pending.put(id, new Entry(p, answer));
    // The sandbox side cancels the stage when it stops waiting; drop the entry then too.
    answer.whenComplete((d, e) -> pending.remove(id));
    for (Consumer<Pending> l : listeners) {
      try {
        l.accept(p);
      } catch (RuntimeException e) {
        // A broken listener must not lose the request: it stays answerable through pending().
      }
    }
    return answer;
  }

  /** Calls {@code listener} for every new request (on the thread that asks). */
  public void onRequest(Consumer<Pending> listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  /** The waiting requests, oldest first. */
  public List<Pending> pending() {
    List<Pending> out = new ArrayList<>();
    pending.values().forEach(e -> out.add(e.pending()));
    out.sort(Comparator.comparingLong(Pending::id));
    return out;
  }

  /** Approves request {@code id}; false when it is no longer waiting. */
  public boolean approve(long id, String decidedBy, String reason) {
    return answer(id, new ApprovalDecision(true, reason, decidedBy));
  }

  /** Denies request {@code id}; false when it is no longer waiting. */
  public boolean deny(long id, String decidedBy, String reason) {
    return answer(id, new ApprovalDecision(false, reason, decidedBy));
  }

  /** Answers request {@code id}; false when it is no longer waiting. */
  public boolean answer(long id, ApprovalDecision decision) {
    Entry e = pending.remove(id);
    return e != null && e.answer().complete(Objects.requireNonNull(decision, "decision"));
  }

  /** Denies every request waiting longer than {@code age}; returns how many. */
  public int expire(Duration age) {
    Instant cutoff = Instant.now().minus(age);
    int n = 0;
    for (Pending p : pending()) {
      if (p.queuedAt().isBefore(cutoff) && deny(p.id(), "queue", "not answered within " + age)) {
        n++;
      }
    }
    return n;
  }
}
