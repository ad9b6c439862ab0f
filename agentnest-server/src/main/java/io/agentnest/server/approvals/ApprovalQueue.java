package io.agentnest.server.approvals;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Wire;
import io.javalin.http.Context;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The approvals queue: a sandbox's operation that its approval policy marks {@code ASK} waits here
 * until a person of the same tenant approves or denies it over the API, or its policy's timeout
 * denies it. Bounded per tenant (past the bound a request is denied at once, so a sandbox cannot
 * grow the queue without end); the question's text comes from the sandbox, so it is bounded too and
 * reaches the reader only as escaped JSON. The questions are listed and answered on the {@link
 * ApprovalBoard} (this server's memory, or the store every server shares); the sandbox waits on
 * this server, which the board tells of the answer wherever it was given.
 */
public final class ApprovalQueue implements ApprovalBoard.Waiting {
  /** Questions one tenant may have waiting at once. */
  static final int MAX_PENDING_PER_TENANT = 100;

  /** Characters of a sandbox-supplied target or detail, and of a decision's reason, kept. */
  static final int MAX_TEXT = 2000;

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Pattern ID = Pattern.compile("apr_[0-9a-f]{24}");

  record Pending(
      String id,
      String tenant,
      ApprovalRequest request,
      Instant expires,
      CompletableFuture<ApprovalDecision> answer) {}

  /**
   * The request attribute naming who answers: {@code api:<tenant>} or {@code console:<tenant>},
   * with {@code :approver:<key id>} for an approver key, or {@code console:admin}.
   */
  public static final String PRINCIPAL = "agentnest.principal";

  private final Map<String, Pending> byId = new ConcurrentHashMap<>();
  private final ApprovalBoard board;
  private final Clock clock;
  private volatile Consumer<ApprovalDecision> decided = d -> {};

  /** A queue of one server, in memory. */
  public ApprovalQueue() {
    this(new LocalApprovalBoard(), Clock.systemUTC());
  }

  /** A queue whose questions are listed and answered on {@code board}. */
  public ApprovalQueue(ApprovalBoard board, Clock clock) {
    this.board = board;
    this.clock = clock;
    board.deliverTo(this);
  }

  /** Has {@code listener} see every decision, however it came (a person, a timeout, a bound). */
  public void onDecided(Consumer<ApprovalDecision> listener) {
    decided = listener;
  }

  /** How many questions wait for an answer now, of every tenant. */
  public int waitingCount() {
    return pending(null).size();
  }

  @Override
  public Set<String> waitingIds() {
    return Set.copyOf(byId.keySet());
  }

  @Override
  public void answered(ApprovalBoard.Answer a) {
    Pending p = byId.get(a.id());
    if (p != null) {
      p.answer().complete(new ApprovalDecision(a.approve(), a.reason(), a.by()));
    }
  }

  /** The handler of one sandbox of {@code tenant} whose policy waits at most {@code timeout}. */
  public ApprovalHandler handlerFor(String tenant, Duration timeout) {
    return request -> enqueue(tenant, request, timeout);
  }

  private synchronized CompletableFuture<ApprovalDecision> enqueue(
      String tenant, ApprovalRequest request, Duration timeout) {
    long waiting = byId.values().stream().filter(p -> p.tenant().equals(tenant)).count();
    if (waiting >= MAX_PENDING_PER_TENANT) {
      return deniedNow("denied: " + MAX_PENDING_PER_TENANT + " approvals are already waiting");
    }
    byte[] raw = new byte[12];
    RANDOM.nextBytes(raw);
    String id = "apr_" + HexFormat.of().formatHex(raw);
    CompletableFuture<ApprovalDecision> answer = new CompletableFuture<>();
    Instant expires = request.requestedAt().plus(timeout);
    byId.put(id, new Pending(id, tenant, request, expires, answer));
    try {
      board.post(
          new ApprovalBoard.Question(
              id,
              tenant,
              text(request.sandboxId()),
              text(request.kind()),
              text(request.target()),
              text(request.detail()),
              request.requestedAt(),
              expires));
    } catch (RuntimeException e) {
      // Nobody could see the question: deny now rather than wait for an answer that cannot come.
      byId.remove(id);
      return deniedNow("denied: the approvals queue is unavailable");
    }
    // The core denies after the policy's timeout on its own; the entry goes at the same time, so
    // nobody approves a question that is no longer asked.
    answer.completeOnTimeout(
        new ApprovalDecision(false, "no decision within " + timeout, "server"),
        timeout.toMillis(),
        TimeUnit.MILLISECONDS);
    answer.whenComplete(
        (d, e) -> {
          byId.remove(id);
          if (d != null) {
            decided.accept(d);
          }
          try {
            board.withdraw(id);
          } catch (RuntimeException gone) {
            // The row lapses with its expiry: nobody can answer a question past it.
          }
        });
    return answer;
  }

  private CompletableFuture<ApprovalDecision> deniedNow(String why) {
    ApprovalDecision d = new ApprovalDecision(false, why, "server");
    decided.accept(d);
    return CompletableFuture.completedFuture(d);
  }

  /** The waiting questions of {@code tenant} (null: every tenant's), oldest first. */
  List<Pending> pending(@Nullable String tenant) {
    return byId.values().stream()
        // A question answered or timed out a moment ago may still be in the map: not waiting.
        .filter(p -> (tenant == null || p.tenant().equals(tenant)) && !p.answer().isDone())
        .sorted((a, b) -> a.request().requestedAt().compareTo(b.request().requestedAt()))
        .toList();
  }

  /**
   * GET /v1/approvals: the caller's tenant's waiting questions (asked on any server), oldest first.
   */
  public void list(Context ctx) {
    Exchange.json(
        ctx,
        200,
        Map.of("approvals", views(Exchange.admin(ctx) ? null : Exchange.tenant(ctx).name())));
  }

  /** The tenant's (null: every tenant's) waiting questions as the API shows them. */
  public List<Wire.ApprovalView> views(@Nullable String tenant) {
    List<Wire.ApprovalView> out = new ArrayList<>();
    for (ApprovalBoard.Question q : board.waiting(tenant, clock.instant())) {
      out.add(
          new Wire.ApprovalView(
              q.id(),
              q.tenant(),
              q.sandboxId(),
              q.kind(),
              q.target(),
              q.detail(),
              q.requestedAt().toString(),
              q.expires().toString()));
    }
    return out;
  }

  /**
   * POST /v1/approvals/{id} {approve, reason}: answers one of the tenant's questions; with {@code
   * approverRequired} (the server's {@code policy.approver_role_required}) or the tenant's own
   * setting, only an approver key or the admin console may.
   */
  public void decide(Context ctx, long maxJson, boolean approverRequired) {
    boolean admin = Exchange.admin(ctx);
    if (!admin) {
      ApproverRole.checkMayAnswer(ctx, Exchange.tenant(ctx), approverRequired);
    }
    String id = ctx.pathParam("id");
    Wire.Decide req = Wire.read(Bodies.read(ctx, maxJson), Wire.Decide.class);
    String reason = req.reason() == null ? "" : req.reason();
    if (reason.length() > MAX_TEXT) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "reason is longer than " + MAX_TEXT + " characters",
          "say why in fewer words");
    }
    if (reason.indexOf('\0') >= 0) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, "reason holds a NUL character", "say why in plain text");
    }
    String why = reason.isEmpty() ? (req.approve() ? "approved" : "denied") : reason;
    // Another tenant's question is exactly as absent as one that never was.
    if (!ID.matcher(id).matches()
        || !board.answer(
            new ApprovalBoard.Answer(id, req.approve(), why, principal(ctx)),
            admin ? null : Exchange.tenant(ctx).name(),
            clock.instant())) {
      throw new ApiException(
          404,
          ErrorCode.NOT_FOUND,
          "approval '" + Escape.id(id) + "' not found (decided, timed out, or never asked)",
          "list the waiting ones with GET /v1/approvals");
    }
    ctx.status(204);
  }

  private static String principal(Context ctx) {
    String p = ctx.attribute(PRINCIPAL);
    return p != null ? p : "api:" + Exchange.tenant(ctx).name();
  }

  /** Denies every waiting question (server shutdown): nothing waits on a server that is gone. */
  public void denyAll() {
    for (Pending p : List.copyOf(byId.values())) {
      p.answer().complete(new ApprovalDecision(false, "the server stopped", "server"));
    }
  }

  /** A sandbox-supplied text as it is listed: bounded, and NUL (which no store keeps) shown. */
  private static String text(String s) {
    String b = s.length() <= MAX_TEXT ? s : s.substring(0, MAX_TEXT) + "…";
    return b.replace('\0', '\uFFFD');
  }
}
