package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalPolicy;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxBudgets;
import io.agentnest.internal.approval.ApprovalGate;
import io.agentnest.internal.approval.PythonAsks;
import io.agentnest.internal.approval.PythonGuard;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.audit.HostBudgets;
import io.agentnest.internal.audit.NetworkAudit;
import io.agentnest.internal.call.CallClock;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.EgressTunnels;
import io.agentnest.internal.channel.ForgedAgent;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.egress.EgressProxy;
import io.agentnest.internal.egress.StaticResolver;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a compromised sandbox flooding the host with forged frames costs the audit store: a bounded
 * number of records, whatever it sends, and the sandbox is destroyed when it keeps pressing. The
 * frames come over a real channel from {@link ForgedAgent}; time stands still ({@code nanos}
 * fixed), so the budgets' buckets never refill and every count is exact.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AuditFloodTest {
  private static final int FLOOD = 5_000;
  private static final LongSupplier STOPPED_CLOCK = () -> 0L;

  private record Rec(String type, Map<String, Object> data) {}

  private final List<Rec> records = Collections.synchronizedList(new ArrayList<>());
  private final List<Budget.Kind> overBudget = new CopyOnWriteArrayList<>();

  private HostBudgets budgets(SandboxBudgets b) {
    return new HostBudgets(
        b,
        (t, d) -> records.add(new Rec(t, Map.<String, Object>copyOf(d))),
        overBudget::add,
        STOPPED_CLOCK);
  }

  private List<Rec> ofType(String type) {
    synchronized (records) {
      return records.stream().filter(r -> r.type().equals(type)).toList();
    }
  }

  /** Waits (bounded) until the host has sent {@code n} frames of {@code op}. */
  private static void awaitSent(ForgedAgent agent, String op, long n) throws InterruptedException {
    for (int i = 0; i < 3_000 && agent.sent(op) < n; i++) {
      Thread.sleep(10);
    }
    assertThat(agent.sent(op)).as("frames '%s' the host sent", op).isEqualTo(n);
  }

  @Test
  void forgedTunnelOpensCostAFewRecordsAndTheSandboxIsDestroyed() throws Exception {
    try (ForgedAgent agent = new ForgedAgent()) {
      AgentChannel channel = new AgentChannel(agent);
      HostBudgets budgets = budgets(SandboxBudgets.defaults());
      EgressProxy proxy =
          new EgressProxy(
              NetworkPolicy.allowlist("allowed.test"),
              StaticResolver.of("allowed.test", "127.0.0.1"),
              new NetworkAudit(budgets.audit(), List.of()),
              null,
              agent.id());
      EgressTunnels tunnels =
          new EgressTunnels(
              channel, proxy, budgets.tunnels(), budgets.overBudget(Budget.Kind.EGRESS_TUNNELS));
      channel.onTunnelFrames(tunnels);

      // What the issue measured: open a tunnel, end it at once, again and again.
      for (int tid = 1; tid <= FLOOD; tid++) {
        agent.send(Json.object().put(Ops.EV, Ops.EV_TCP_OPEN).put("tid", tid), new byte[0]);
        agent.send(Json.object().put(Ops.EV, Ops.EV_TCP_EOF).put("tid", tid), new byte[0]);
      }
      agent.flush();
      // Every tunnel ends with the host's tcp_close: at once when refused, else after its attempt.
      awaitSent(agent, "tcp_close", FLOOD);
      budgets.close();
      channel.close();
    }

    int burst = SandboxBudgets.defaults().tunnelBurst();
    // The burst's identical denials fold into one record and one count, for each of the two types.
    List<Rec> attempts = ofType("network.attempt");
    assertThat(attempts).hasSize(2);
    assertThat(attempts.get(0).data())
        .containsEntry("rule", "bad-request")
        .doesNotContainKey("repeated");
    assertThat(attempts.get(1).data()).containsEntry("repeated", (long) burst - 1);
    assertThat(ofType("policy.violation")).hasSize(2);
    // The refusals: reported when they start, and once more when they reach the destroy count.
    assertThat(ofType("limit.hit"))
        .extracting(r -> r.data().get("action"))
        .containsExactly("refused", "destroyed");
    assertThat(ofType("limit.hit").get(1).data())
        .containsEntry("limit", "EGRESS_TUNNELS")
        .containsEntry("refused", (long) SandboxBudgets.defaults().destroyAfterRefusals());
    assertThat(records).hasSize(6);
    assertThat(overBudget).containsExactly(Budget.Kind.EGRESS_TUNNELS);
  }

  @Test
  void forgedApprovalQuestionsAreCappedPerCallAndPerSandboxAndEachIsAnswered() throws Exception {
    SandboxBudgets b = SandboxBudgets.defaults();
    try (ForgedAgent agent = new ForgedAgent()) {
      AgentChannel channel = new AgentChannel(agent);
      HostBudgets budgets = budgets(b);
      ApprovalGate gate =
          new ApprovalGate(agent.id(), null, Duration.ofSeconds(5), budgets.audit()::record);
      PythonAsks asks =
          new PythonAsks(
              channel,
              gate,
              new PythonGuard(
                  ApprovalPolicy.builder()
                      .python("socket.connect", ApprovalPolicy.Action.ASK)
                      .build()),
              Redactor.secretsOnly(Map.of()),
              budgets.asks(),
              budgets.asksPerCall(),
              budgets.audit(),
              budgets.overBudget(Budget.Kind.APPROVAL_ASKS));
      long callId = channel.newId();
      PythonAsks.Call call =
          asks.forCall(callId, new CallClock(Duration.ofMinutes(1), Duration.ofMinutes(1)));
      CompletableFuture<Frame> done =
          channel.register(
              callId,
              f -> {
                if (f.ev().equals(Ops.EV_ASK)) {
                  call.onAsk(f);
                }
              });

      // Each question names another target, so that none of them folds with another.
      for (int ask = 1; ask <= FLOOD; ask++) {
        agent.send(
            Json.object()
                .put("id", callId)
                .put(Ops.EV, Ops.EV_ASK)
                .put("ask", ask)
                .put("event", "socket.connect")
                .put("target", "10.0." + (ask / 250) + "." + (ask % 250) + ":443")
                .put("detail", "forged"),
            new byte[0]);
      }
      agent.send(Json.object().put("id", callId).put(Ops.EV, Ops.EV_RESULT), new byte[0]);
      agent.flush();
      channel.await(done, Duration.ofSeconds(30), "flood");
      // Every question gets its answer (a denial for all but the admitted ones).
      awaitSent(agent, "answer", FLOOD);
      budgets.close();
      channel.close();
    }

    // Only the ask burst reached the approval gate: three records each (requested, decided and,
    // as no handler is set, the violation).
    assertThat(ofType("approval.requested")).hasSize(b.askBurst());
    assertThat(ofType("approval.decided")).hasSize(b.askBurst());
    assertThat(ofType("policy.violation")).hasSize(b.askBurst());
    // Past the burst: one report of the refusals, and their count when the sandbox went away;
    // past the per-call cap: one report for the call.
    assertThat(ofType("limit.hit"))
        .extracting(r -> r.data().get("limit"))
        .containsExactlyInAnyOrder("APPROVAL_ASKS", "ASKS_PER_CALL", "APPROVAL_ASKS");
    assertThat(records).hasSize(3 * b.askBurst() + 3);
    // 5,000 questions, 256 counted against the budget: short of the destroy count.
    assertThat(overBudget).isEmpty();
  }

  @Test
  void aSandboxThatKeepsAskingPastItsBudgetIsDestroyed() throws IOException, InterruptedException {
    SandboxBudgets b = SandboxBudgets.defaults().withAskBurst(2).withDestroyAfterRefusals(10);
    try (ForgedAgent agent = new ForgedAgent()) {
      AgentChannel channel = new AgentChannel(agent);
      HostBudgets budgets = budgets(b);
      ApprovalGate gate =
          new ApprovalGate(agent.id(), null, Duration.ofSeconds(5), budgets.audit()::record);
      PythonAsks asks =
          new PythonAsks(
              channel,
              gate,
              new PythonGuard(
                  ApprovalPolicy.builder().python("open", ApprovalPolicy.Action.ASK).build()),
              Redactor.secretsOnly(Map.of()),
              budgets.asks(),
              budgets.asksPerCall(),
              budgets.audit(),
              budgets.overBudget(Budget.Kind.APPROVAL_ASKS));
      // Many calls, a few questions each: the per-call cap never binds, the sandbox budget does.
      for (int c = 0; c < 20; c++) {
        long callId = channel.newId();
        PythonAsks.Call call =
            asks.forCall(callId, new CallClock(Duration.ofMinutes(1), Duration.ofMinutes(1)));
        for (int ask = 1; ask <= 3; ask++) {
          call.onAsk(
              new Frame(
                  Json.object()
                      .put("id", callId)
                      .put(Ops.EV, Ops.EV_ASK)
                      .put("ask", ask)
                      .put("event", "open")
                      .put("target", "/etc/x" + ask),
                  new byte[0]));
        }
      }
      channel.close();
    }
    assertThat(overBudget).containsExactly(Budget.Kind.APPROVAL_ASKS);
    assertThat(ofType("approval.requested")).hasSize(2);
  }
}
