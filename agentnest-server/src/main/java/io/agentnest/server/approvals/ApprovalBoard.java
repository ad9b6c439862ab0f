package io.agentnest.server.approvals;

import java.time.Instant;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Where the approval questions of a deployment are listed and answered. One server keeps them in
 * memory ({@link LocalApprovalBoard}); servers sharing a PostgreSQL store keep them there, so a
 * question asked by a sandbox on one server is listed and answered through any other, and the
 * answer is pushed to the server whose sandbox waits (it is never polled for).
 */
public interface ApprovalBoard extends AutoCloseable {
  /** A question as every server lists it (its texts already bounded and free of NUL). */
  record Question(
      String id,
      String tenant,
      String sandboxId,
      String kind,
      String target,
      String detail,
      Instant requestedAt,
      Instant expires) {}

  /** A person's answer to question {@code id}. */
  record Answer(String id, boolean approve, String reason, String by) {}

  /** The server's side: which questions wait here, and where their answers go. */
  interface Waiting {
    /** The ids of the questions this server's sandboxes wait on. */
    Set<String> waitingIds();

    /** Question {@code a.id()} was answered (on this server or another). */
    void answered(Answer a);
  }

  /** Lists {@code q} until it is answered, withdrawn or expires. */
  void post(Question q);

  /** The unanswered, unexpired questions of {@code tenant} (null: every tenant's), oldest first. */
  List<Question> waiting(@Nullable String tenant, Instant now);

  /**
   * Records {@code a} when its question still waits, has not expired and is {@code tenant}'s (null:
   * any tenant's, for the admin), and sends it to the server that asked; false otherwise.
   */
  boolean answer(Answer a, @Nullable String tenant, Instant now);

  /** The question ended on the server that asked it (answered, timed out, server stopping). */
  void withdraw(String id);

  /** Sends every answer to {@code w} from now on. */
  void deliverTo(Waiting w);

  @Override
  void close();
}
