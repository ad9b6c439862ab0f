package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.ApprovalQueue;
import io.agentnest.ApprovalRequest;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Limit;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Approvals against a real sandbox: shell commands and the file API are checked on the host before
 * they run; Python sessions ask through the interpreter's audit hook; the paused operation waits, a
 * timeout denies, a denial raises inside the sandbox and the call goes on; everything is audited.
 */
@ExtendWith(DockerEngineRequired.class)
class ApprovalsIT {
  static final ApprovalPolicy POLICY =
      ApprovalPolicy.builder()
          .fileDeletion(Action.ASK)
          .systemModification(Action.ASK)
          .shell("\\bgit\\s+push\\b", Action.DENY)
          .python("socket.connect", Action.DENY)
          .python("subprocess.Popen", Action.ASK)
          .timeout(Duration.ofSeconds(2))
          .build();

  @TempDir static Path auditDir;
  static AuditLog audit;
  static Sandbox sandbox;
  static final List<ApprovalRequest> asked = new CopyOnWriteArrayList<>();

  /** What the handler does next; each test sets it. */
  static volatile ApprovalHandler next = ApprovalHandler.denyAll();

  @BeforeAll
  static void start() throws Exception {
    audit = AuditLog.open(auditDir);
    sandbox =
        Sandbox.create(
            SandboxConfig.builder()
                .auditLog(audit)
                .approvals(POLICY)
                .approvalHandler(
                    request -> {
                      asked.add(request);
                      return next.decide(request);
                    })
                .build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.destroy();
    }
    if (audit != null) {
      audit.close();
    }
  }

  @BeforeEach
  void reset() {
    asked.clear();
    next = ApprovalHandler.denyAll();
  }

  static ApprovalHandler answer(boolean allow) {
    return r ->
        CompletableFuture.completedFuture(
            new ApprovalDecision(allow, allow ? "ok by test" : "refused by test", "tester"));
  }

  // ------------------------------------------------------------------------------ Python hooks

  @Test
  void pythonDeletionAsksAndGoesAheadWhenApproved() {
    next = answer(true);
    ExecResult r =
        sandbox.runCode(
            "import os\nopen('approved.txt', 'w').write('x')\n"
                + "os.remove('approved.txt')\nos.path.exists('approved.txt')");
    assertThat(r.error()).isNull();
    assertThat(r.result()).isEqualTo("False");
    assertThat(asked).hasSize(1);
    assertThat(asked.get(0).kind()).isEqualTo("file.delete");
    assertThat(asked.get(0).target()).isEqualTo("/workspace/approved.txt");
    assertThat(asked.get(0).detail()).contains("os.remove");
  }

  @Test
  void aRecursiveDeletionAsksAboutTheRealPathsUnderTheTreeNotTheWorkingDirectory() {
    // shutil.rmtree removes with paths relative to a directory descriptor: each question must
    // name the file under the tree, not the same name in /workspace.
    next = answer(true);
    ExecResult r =
        sandbox.runCode(
            "import os, shutil\nos.makedirs('out/x', exist_ok=True)\n"
                + "open('out/x/f.txt', 'w').write('x')\nshutil.rmtree('out')\n"
                + "os.path.exists('out')");
    assertThat(r.error()).isNull();
    assertThat(r.result()).isEqualTo("False");
    assertThat(asked)
        .extracting(ApprovalRequest::target)
        .contains("/workspace/out", "/workspace/out/x/f.txt", "/workspace/out/x")
        .doesNotContain("/workspace/f.txt", "/workspace/x");
  }

  @Test
  void deniedPythonDeletionRaisesInsideTheSandboxAndTheCallGoesOn() {
    next = answer(false);
    ExecResult r =
        sandbox.runCode(
            "import os, shutil\nopen('kept.txt', 'w').write('x')\nos.makedirs('tree/a',"
                + " exist_ok=True)\nerrors = []\nfor f in (lambda: os.remove('kept.txt'),"
                + " lambda: shutil.rmtree('tree')):\n    try:\n        f()\n    except"
                + " PermissionError as e:\n        errors.append(str(e))\n"
                + "print('still here', os.path.exists('kept.txt'), os.path.isdir('tree/a'))\n"
                + "errors");
    assertThat(r.error()).isNull();
    assertThat(r.stdout()).contains("still here True True");
    assertThat(r.result()).contains("agentnest: os.remove /workspace/kept.txt was denied");
    assertThat(r.result()).contains("shutil.rmtree /workspace/tree was denied");
    assertThat(r.result()).contains("refused by test");
    // The session keeps its state after a denial.
    assertThat(sandbox.runCode("len(errors)").result()).isEqualTo("2");
    // Uncaught, the denial's traceback ends at the user's line, not in the worker's audit hook.
    ExecResult uncaught = sandbox.runCode("os.remove('kept.txt')");
    assertThat(uncaught.error()).isNotNull();
    assertThat(uncaught.error().name()).isEqualTo("PermissionError");
    assertThat(uncaught.error().traceback())
        .contains("os.remove('kept.txt')")
        .doesNotContain("in _hook", "in _ask");
  }

  @Test
  void writesOutsideTheWorkspaceAndModeChangesAreSystemModifications() {
    next = answer(false);
    ExecResult r =
        sandbox.runCode(
            "import os\nout = []\n"
                + "open('/tmp/scratch.txt', 'w').write('fine')\n"
                + "open('mode.sh', 'w').write('x')\n"
                + "for f in (lambda: open('/etc/agentnest-probe', 'w'),"
                + " lambda: os.chmod('mode.sh', 0o777)):\n"
                + "    try:\n        f()\n    except PermissionError as e:\n"
                + "        out.append(str(e))\nout");
    assertThat(r.error()).isNull();
    assertThat(asked).extracting(ApprovalRequest::kind).containsOnly("system.modify");
    assertThat(asked)
        .extracting(ApprovalRequest::target)
        .containsExactly("/etc/agentnest-probe", "/workspace/mode.sh");
    assertThat(r.result()).contains("agentnest: open /etc/agentnest-probe was denied");
    assertThat(r.result()).contains("os.chmod /workspace/mode.sh was denied");
  }

  @Test
  void subprocessAsksWithTheCommandLineAndADenyRuleRefusesWithoutAsking() {
    next = answer(false);
    ExecResult r =
        sandbox.runCode(
            "import subprocess, socket\nout = []\n"
                + "try:\n    subprocess.run(['rm', '-f', 'x'])\n"
                + "except PermissionError as e:\n    out.append(str(e))\n"
                + "try:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
                + "except PermissionError as e:\n    out.append(str(e))\nout");
    assertThat(r.error()).isNull();
    assertThat(asked).hasSize(1);
    assertThat(asked.get(0).target()).isEqualTo("rm -f x");
    assertThat(r.result()).contains("subprocess.Popen rm -f x was denied");
    assertThat(r.result()).contains("socket.connect").contains("denied by policy");
  }

  @Test
  void noAnswerInTimeDeniesAndTheWaitDoesNotCountAgainstTheCallTimeout() {
    next = r -> new CompletableFuture<>(); // never answers
    ExecResult r =
        sandbox.runCode(
            "import os, time\nopen('slow.txt', 'w').write('x')\nt0 = time.time()\n"
                + "try:\n    os.remove('slow.txt')\nexcept PermissionError as e:\n"
                + "    msg = str(e)\nround(time.time() - t0), msg",
            ExecOptions.builder().timeout(Duration.ofSeconds(1)).build());
    assertThat(r.limit()).isNull();
    assertThat(r.error()).isNull();
    assertThat(r.result()).contains("no approval arrived within PT2S");
    assertThat(r.result()).startsWith("(2,");
  }

  @Test
  void cancellingAWaitingCallStopsItAndTheSessionStaysInStep() throws Exception {
    next = r -> new CompletableFuture<>();
    Execution ex =
        sandbox
            .pythonSession("cancel")
            .start(
                "import os\nopen('c.txt', 'w').write('x')\nos.remove('c.txt')\nprint('ran on')",
                ExecOptions.defaults());
    await().atMost(Duration.ofSeconds(10)).until(() -> asked.size() == 1);
    ex.cancel();
    ExecResult r = ex.result().get(20, TimeUnit.SECONDS);
    assertThat(r.stdout()).doesNotContain("ran on");
    assertThat(r.limit()).isEqualTo(Limit.CANCELLED);
    assertThat(sandbox.pythonSession("cancel").run("1 + 1").result()).isEqualTo("2");
  }

  @Test
  void queueHandlerLetsAnotherInterfaceAnswerWhileTheCodeWaits() throws Exception {
    ApprovalQueue queue = new ApprovalQueue();
    next = queue;
    CompletableFuture<ExecResult> run =
        sandbox.runCodeAsync(
            "import os\nopen('q.txt', 'w').write('x')\nos.remove('q.txt')\n"
                + "os.path.exists('q.txt')",
            ExecOptions.defaults());
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.pending().size() == 1);
    ApprovalQueue.Pending p = queue.pending().get(0);
    assertThat(p.request().target()).isEqualTo("/workspace/q.txt");
    assertThat(queue.approve(p.id(), "reviewer", "ok from the console")).isTrue();
    assertThat(run.get(20, TimeUnit.SECONDS).result()).isEqualTo("False");
  }

  // -------------------------------------------------------------------------- host-side checks

  @Test
  void shellCommandsAreCheckedBeforeTheyRun() {
    sandbox.exec("echo x > /workspace/shell.txt");
    next = answer(false);
    assertThatThrownBy(() -> sandbox.exec("rm -f /workspace/shell.txt"))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("'rm' deletes files")
        .hasMessageContaining("refused by test");
    assertThat(sandbox.files().exists("shell.txt")).isTrue();

    next = answer(true);
    assertThat(sandbox.exec("rm -f /workspace/shell.txt").ok()).isTrue();
    assertThat(sandbox.files().exists("shell.txt")).isFalse();

    asked.clear();
    next = answer(false);
    assertThatThrownBy(() -> sandbox.exec("git push origin main"))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("denied by policy");
    assertThat(asked).as("a deny rule refuses without asking").isEmpty();
    assertThatThrownBy(
            () -> sandbox.exec(List.of("pip", "install", "requests"), ExecOptions.defaults()))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("installs or removes packages");
  }

  @Test
  void streamedShellCommandStartsOnlyOnceApproved() throws Exception {
    sandbox.exec("touch /workspace/streamed.txt");
    ApprovalQueue queue = new ApprovalQueue();
    next = queue;
    Execution ex = sandbox.start("rm -v /workspace/streamed.txt", ExecOptions.defaults());
    await().atMost(Duration.ofSeconds(10)).until(() -> queue.pending().size() == 1);
    assertThat(sandbox.files().exists("streamed.txt")).isTrue();
    queue.approve(queue.pending().get(0).id(), "reviewer", "go");
    assertThat(ex.result().get(20, TimeUnit.SECONDS).stdout()).contains("removed");

    next = answer(false);
    Execution denied = sandbox.start("rm -v /workspace/nothing.txt", ExecOptions.defaults());
    assertThatThrownBy(() -> denied.result().get(20, TimeUnit.SECONDS))
        .hasCauseInstanceOf(ApprovalDeniedException.class);
  }

  @Test
  void fileApiDeletionAsks() {
    sandbox.files().write("api.txt", "x");
    next = answer(false);
    assertThatThrownBy(() -> sandbox.files().delete("api.txt"))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("/workspace/api.txt");
    assertThat(sandbox.files().exists("api.txt")).isTrue();
    next = answer(true);
    sandbox.files().delete("api.txt");
    assertThat(sandbox.files().exists("api.txt")).isFalse();
  }

  @Test
  void everyRequestDecisionAndRefusalIsAudited() {
    next = answer(false);
    sandbox.runCode("import os\ntry:\n    os.remove('audited.txt')\nexcept OSError:\n    pass");
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                !audit
                    .query(
                        AuditQuery.builder().sandbox(sandbox.id()).type("policy.violation").build())
                    .isEmpty());
    List<AuditEvent> events =
        audit.query(AuditQuery.builder().sandbox(sandbox.id()).limit(10_000).build());
    AuditEvent requested = last(events, "approval.requested", "/workspace/audited.txt");
    assertThat(requested.data()).containsEntry("kind", "file.delete");
    AuditEvent decided = last(events, "approval.decided", "/workspace/audited.txt");
    assertThat(decided.data())
        .containsEntry("allowed", false)
        .containsEntry("decided_by", "tester")
        .containsEntry("reason", "refused by test")
        .containsKey("waited_ms");
    AuditEvent violation = last(events, "policy.violation", "/workspace/audited.txt");
    assertThat(violation.data()).containsEntry("kind", "file.delete");
    assertThat(audit.verify().ok()).isTrue();
  }

  static AuditEvent last(List<AuditEvent> events, String type, String target) {
    return events.stream()
        .filter(e -> e.type().equals(type) && target.equals(e.data().get("target")))
        .reduce((a, b) -> b)
        .orElseThrow(() -> new AssertionError("no " + type + " for " + target + " in " + events));
  }
}
