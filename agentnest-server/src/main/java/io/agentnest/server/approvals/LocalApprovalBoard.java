package io.agentnest.server.approvals;

import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/** The questions of one server, in memory: answered where they were asked. */
public final class LocalApprovalBoard implements ApprovalBoard {
  private final Map<String, Question> questions = new ConcurrentHashMap<>();
  private volatile Waiting waiting =
      new Waiting() {
        @Override
        public Set<String> waitingIds() {
          return Set.of();
        }

        @Override
        public void answered(Answer a) {}
      };

  @Override
  public void post(Question q) {
    questions.put(q.id(), q);
  }

  @Override
  public List<Question> waiting(@Nullable String tenant, Instant now) {
    return questions.values().stream()
        .filter(q -> (tenant == null || q.tenant().equals(tenant)) && now.isBefore(q.expires()))
        .sorted(Comparator.comparing(Question::requestedAt))
        .toList();
  }

  @Override
  public boolean answer(Answer a, @Nullable String tenant, Instant now) {
    Question q = questions.get(a.id());
    if (q == null
        || (tenant != null && !q.tenant().equals(tenant))
        || !now.isBefore(q.expires())
        || !questions.remove(a.id(), q)) {
      return false;
    }
    waiting.answered(a);
    return true;
  }

  @Override
  public void withdraw(String id) {
    questions.remove(id);
  }

  @Override
  public void deliverTo(Waiting w) {
    waiting = w;
  }

  @Override
  public void close() {
    questions.clear();
  }
}
