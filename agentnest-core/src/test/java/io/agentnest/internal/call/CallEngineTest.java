package io.agentnest.internal.call;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.FileOperationException;
import io.agentnest.Limit;
import io.agentnest.SandboxBudgets;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.approval.ApprovalGate;
import io.agentnest.internal.approval.PythonAsks;
import io.agentnest.internal.approval.PythonGuard;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.audit.HostBudgets;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.ForgedAgent;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Json;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The call engine against an agent played by the test ({@link ForgedAgent}, a real channel over
 * loopback): what it sends, when, and what it makes of what comes back (or does not).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CallEngineTest {
  /** A short margin, so that a silent agent is given up on soon (production: 10 s). */
  private static final Duration MARGIN = Duration.ofMillis(200);

  private static final String SECRET = "s3cr3t-token-value-1234";

  private record Rec(String type, Map<String, Object> data) {}

  private final List<Rec> records = Collections.synchronizedList(new ArrayList<>());
  private final AtomicReference<@Nullable RuntimeException> unusable = new AtomicReference<>();
  private ForgedAgent agent;
  private AgentChannel channel;

  @BeforeEach
  void open() throws Exception {
    agent = new ForgedAgent();
    channel = new AgentChannel(agent);
  }

  @AfterEach
  void close() {
    channel.close();
    agent.close();
  }

  private CallEngine engine(SandboxConfig config, @Nullable ApprovalHandler handler) {
    Budget.Recorder audit = (t, d) -> records.add(new Rec(t, new LinkedHashMap<>(d)));
    HostBudgets budgets =
        new HostBudgets(SandboxBudgets.defaults(), audit, k -> {}, System::nanoTime);
    ApprovalGate gate =
        new ApprovalGate(agent.id(), handler, config.approvals().timeout(), audit::record);
    PythonGuard guard = new PythonGuard(config.approvals());
    Redactor redactor = Redactor.secretsOnly(Map.of("TOKEN", SECRET));
    PythonAsks asks =
        new PythonAsks(
            channel,
            gate,
            guard,
            redactor,
            budgets.asks(),
            budgets.asksPerCall(),
            budgets.audit(),
            budgets.overBudget(Budget.Kind.APPROVAL_ASKS));
    return new CallEngine(
        agent.id(),
        config,
        channel,
        redactor,
        gate,
        guard,
        asks,
        audit,
        () -> {
          RuntimeException e = unusable.get();
          if (e != null) {
            throw e;
          }
        },
        MARGIN);
  }

  private static SandboxConfig config() {
    return SandboxConfig.builder().build();
  }

  private static SandboxConfig asking(String regex) {
    return SandboxConfig.builder()
        .approvals(ApprovalPolicy.builder().shell(regex, Action.ASK).build())
        .build();
  }

  /** The agent ends every call it is sent with exit code 0 (after {@code out}, if given). */
  private void agentAnswers(Function<Frame, List<Frame>> out) {
    agent.answerWith(
        f -> {
          if (!f.header().path(Ops.OP).asText().equals(Ops.OP_EXEC)) {
            return List.of();
          }
          List<Frame> answer = new ArrayList<>(out.apply(f));
          answer.add(frame(Ops.EV_RESULT, f.header().path("id").asLong()).put("exit_code", 0));
          return answer;
        });
  }

  private void agentAnswers() {
    agentAnswers(f -> List.of());
  }

  private static FrameBuilder frame(String ev, long id) {
    return new FrameBuilder(Json.object().put(Ops.EV, ev).put("id", id));
  }

  /** A frame the agent sends: header fields, then a payload. */
  private record FrameBuilder(ObjectNode header) {
    Frame put(String field, int value) {
      return new Frame(header.put(field, value), new byte[0]);
    }

    Frame payload(byte[] data) {
      return new Frame(header, data);
    }
  }

  private List<String> recordTypes() {
    synchronized (records) {
      return records.stream().map(Rec::type).toList();
    }
  }

  private List<Rec> ofType(String type) {
    synchronized (records) {
      return records.stream().filter(r -> r.type().equals(type)).toList();
    }
  }

  private static Throwable failure(Execution ex) throws InterruptedException {
    try {
      ex.result().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (TimeoutException e) {
      throw new AssertionError("the execution did not end within 10 seconds", e);
    }
    throw new AssertionError("the execution succeeded");
  }

  // ---- approval before the call starts

  @Test
  void aCommandThatNeedsApprovalReachesTheAgentOnlyOnceApproved() throws Exception {
    CompletableFuture<ApprovalDecision> decision = new CompletableFuture<>();
    CountDownLatch asked = new CountDownLatch(1);
    CallEngine engine =
        engine(
            asking("\\bgit\\s+push\\b"),
            req -> {
              asked.countDown();
              return decision;
            });
    agentAnswers();

    Execution ex =
        engine.start(
            CallEngine.shellRequest("git push"), new byte[0], ExecOptions.defaults(), false);
    assertThat(asked.await(10, TimeUnit.SECONDS)).as("the handler was asked").isTrue();
    // Asked and not yet answered: nothing went to the agent, no call was audited as started.
    assertThat(agent.requestsSoFar()).isEmpty();
    assertThat(recordTypes()).doesNotContain("exec.started");

    decision.complete(ApprovalDecision.allow("go ahead"));
    assertThat(ex.result().get(10, TimeUnit.SECONDS).exitCode()).isZero();
    Frame sent = agent.nextRequest();
    assertThat(sent.header().path(Ops.OP).asText()).isEqualTo(Ops.OP_EXEC);
    assertThat(sent.header().path("cmd").asText()).isEqualTo("git push");
    assertThat(recordTypes()).containsSubsequence("approval.requested", "exec.started");
  }

  @Test
  void aRefusedCommandNeverReachesTheAgentWhetherRunOrStarted() throws Exception {
    CallEngine engine = engine(asking("\\bgit\\s+push\\b"), ApprovalHandler.denyAll());
    agentAnswers();

    assertThatThrownBy(
            () ->
                engine.run(
                    CallEngine.shellRequest("git push"),
                    new byte[0],
                    ExecOptions.defaults(),
                    false))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("deny-all");
    Throwable streamed =
        failure(
            engine.start(
                CallEngine.argvRequest(List.of("git", "push")),
                new byte[0],
                ExecOptions.defaults(),
                false));
    assertThat(streamed).isInstanceOf(ApprovalDeniedException.class);

    // The first frame the agent ever gets is the allowed command that came after.
    engine.run(CallEngine.shellRequest("echo ok"), new byte[0], ExecOptions.defaults(), false);
    assertThat(agent.nextRequest().header().path("cmd").asText()).isEqualTo("echo ok");
    assertThat(recordTypes()).containsOnlyOnce("exec.started");
  }

  @Test
  void aCommandThePolicyDeniesFailsWithoutAskingAnyone() {
    SandboxConfig config =
        SandboxConfig.builder()
            .approvals(ApprovalPolicy.builder().shell("\\brm\\b", Action.DENY).build())
            .build();
    CountDownLatch asked = new CountDownLatch(1);
    CallEngine engine =
        engine(
            config,
            req -> {
              asked.countDown();
              return CompletableFuture.completedFuture(ApprovalDecision.allow("yes"));
            });

    assertThatThrownBy(
            () ->
                engine.run(
                    CallEngine.shellRequest("rm -rf /workspace"),
                    new byte[0],
                    ExecOptions.defaults(),
                    false))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("denied by policy");
    assertThat(asked.getCount()).isEqualTo(1);
    assertThat(agent.requestsSoFar()).isEmpty();
  }

  // ---- what the request carries

  @Test
  void theRequestCarriesTheSandboxDefaultsUnlessTheCallGivesItsOwn() throws Exception {
    SandboxConfig config =
        SandboxConfig.builder()
            .execTimeout(Duration.ofSeconds(7))
            .maxOutputBytes(1234)
            .workdir("/workspace/src")
            .build();
    CallEngine engine = engine(config, null);
    agentAnswers();

    engine.run(CallEngine.shellRequest("true"), new byte[0], ExecOptions.defaults(), false);
    ObjectNode defaults = agent.nextRequest().header();
    assertThat(defaults.path("timeout_ms").asLong()).isEqualTo(7_000);
    assertThat(defaults.path("max_output").asLong()).isEqualTo(1234);
    assertThat(defaults.path("cwd").asText()).isEqualTo("/workspace/src");
    assertThat(defaults.has("env")).isFalse();

    ExecOptions own =
        ExecOptions.builder()
            .timeout(Duration.ofSeconds(2))
            .maxOutputBytes(10)
            .workdir("/tmp")
            .env("GREETING", "hi")
            .build();
    engine.run(CallEngine.shellRequest("true"), new byte[0], own, false);
    ObjectNode given = agent.nextRequest().header();
    assertThat(given.path("timeout_ms").asLong()).isEqualTo(2_000);
    assertThat(given.path("max_output").asLong()).isEqualTo(10);
    assertThat(given.path("cwd").asText()).isEqualTo("/tmp");
    assertThat(given.path("env").path("GREETING").asText()).isEqualTo("hi");
    assertThat(given.path("id").asLong()).isGreaterThan(defaults.path("id").asLong());
  }

  // ---- output cap

  @Test
  void outputPastTheCapIsCutByTheHostWhenTheAgentGoesOnSending() throws Exception {
    CallEngine engine = engine(config(), null);
    byte[] chunk = new byte[64 * 1024];
    Arrays.fill(chunk, (byte) 'a');
    // Five chunks against a cap of 10 bytes, and a result that claims nothing was cut.
    agentAnswers(
        f -> {
          long id = f.header().path("id").asLong();
          List<Frame> out = new ArrayList<>();
          for (int i = 0; i < 5; i++) {
            out.add(frame(Ops.EV_OUT, id).payload(chunk));
          }
          return out;
        });

    ExecResult r =
        engine.run(
            CallEngine.shellRequest("yes"),
            new byte[0],
            ExecOptions.builder().maxOutputBytes(10).build(),
            false);

    assertThat(r.stdout()).hasSize(10 + OutputCollector.SLACK);
    assertThat(r.truncated()).isTrue();
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
    assertThat(ofType("limit.hit")).hasSize(1);
  }

  // ---- deadline and answer margin

  @Test
  void aSilentAgentFailsARunOnceTheTimeoutAndTheMarginHavePassed() {
    CallEngine engine = engine(config(), null);

    assertThatThrownBy(
            () ->
                engine.run(
                    CallEngine.shellRequest("sleep 1000"),
                    new byte[0],
                    ExecOptions.builder().timeout(Duration.ofMillis(100)).build(),
                    false))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("did not answer 'exec'");
    assertThat(ofType("exec.finished"))
        .singleElement()
        .satisfies(r -> assertThat(r.data()).containsKey("error"));
  }

  @Test
  void aSilentAgentFailsAStartedCallNamingTheMargin() throws Exception {
    CallEngine engine = engine(config(), null);

    Execution ex =
        engine.start(
            CallEngine.shellRequest("sleep 1000"),
            new byte[0],
            ExecOptions.builder().timeout(Duration.ofMillis(100)).build(),
            false);

    assertThat(failure(ex))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("did not answer within its timeout plus 200 ms");
    assertThat(ofType("exec.finished")).hasSize(1);
  }

  @Test
  void aStartedCallThatEndsIsAuditedWithItsExitAsARunIs() throws Exception {
    agentAnswers();
    CallEngine engine = engine(config(), null);

    Execution ex =
        engine.start(CallEngine.shellRequest("true"), new byte[0], ExecOptions.defaults(), false);

    assertThat(ex.result().get(10, TimeUnit.SECONDS).exitCode()).isZero();
    // exec.finished is written before the result is handed over, so it is there now.
    assertThat(ofType("exec.finished"))
        .singleElement()
        .satisfies(r -> assertThat(r.data()).containsEntry("exit", 0));
  }

  // ---- closed channel, unusable sandbox

  @Test
  void aCallOnAClosedChannelFailsWithTheReasonItWasClosedFor() {
    CallEngine engine = engine(config(), null);
    channel.close("sandbox x was destroyed: it kept asking for more tunnels");

    assertThatThrownBy(
            () ->
                engine.run(
                    CallEngine.shellRequest("true"), new byte[0], ExecOptions.defaults(), false))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("kept asking for more tunnels");
    assertThatThrownBy(
            () ->
                engine.start(
                    CallEngine.pythonRequest("default"), new byte[0], ExecOptions.defaults(), true))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("kept asking for more tunnels");
  }

  @Test
  void aCallInFlightFailsWithTheReasonWhenTheChannelCloses() throws Exception {
    CallEngine engine = engine(config(), null);
    Execution ex =
        engine.start(
            CallEngine.shellRequest("sleep 1000"), new byte[0], ExecOptions.defaults(), false);
    agent.nextRequest();

    channel.close("sandbox x was destroyed: over budget");

    assertThat(failure(ex))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("over budget");
  }

  @Test
  void anUnusableSandboxSendsNothing() throws Exception {
    CallEngine engine = engine(config(), null);
    unusable.set(new SandboxClosedException("sandbox x was destroyed"));

    assertThatThrownBy(
            () ->
                engine.run(
                    CallEngine.shellRequest("true"), new byte[0], ExecOptions.defaults(), false))
        .isInstanceOf(SandboxClosedException.class);
    assertThatThrownBy(
            () ->
                engine.start(
                    CallEngine.pythonRequest("default"), new byte[0], ExecOptions.defaults(), true))
        .isInstanceOf(SandboxClosedException.class);
    assertThatThrownBy(
            () ->
                engine.request(
                    Json.object().put(Ops.OP, Ops.OP_PY_CLOSE).put("session", "s"),
                    Duration.ofSeconds(1)))
        .isInstanceOf(SandboxClosedException.class);
    assertThat(agent.requestsSoFar()).isEmpty();
    assertThat(records).isEmpty();
  }

  // ---- cancel, agent errors

  @Test
  void cancellingAStartedCallAsksTheAgentToStopIt() throws Exception {
    CallEngine engine = engine(config(), null);
    Execution ex =
        engine.start(
            CallEngine.shellRequest("sleep 1000"), new byte[0], ExecOptions.defaults(), false);
    long callId = agent.nextRequest().header().path("id").asLong();

    ex.cancel();

    ObjectNode signal = agent.nextRequest().header();
    assertThat(signal.path(Ops.OP).asText()).isEqualTo(Ops.OP_SIGNAL);
    assertThat(signal.path("target").asLong()).isEqualTo(callId);
    assertThat(signal.path("limit").asText()).isEqualTo("CANCELLED");
  }

  @Test
  void anAgentErrorIsMaskedAndABadPathIsAFileOperationFailure() {
    CallEngine engine = engine(config(), null);

    assertThat(
            engine.agentError(
                Json.object().put("code", "BAD_PATH").put("message", "escapes the workspace")))
        .isInstanceOf(FileOperationException.class);
    assertThat(
            engine.agentError(
                Json.object().put("code", "IO").put("message", "cannot open " + SECRET)))
        .hasMessageContaining("sandbox agent error IO")
        .hasMessageNotContaining(SECRET);
  }

  @Test
  void anEmptyArgvIsRefusedWithWhatToGive() {
    assertThatThrownBy(() -> CallEngine.argvRequest(List.of()))
        .hasMessageContaining("argv is empty: give at least the program to run");
  }
}
