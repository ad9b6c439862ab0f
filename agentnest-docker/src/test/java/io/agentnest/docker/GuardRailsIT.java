package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.ApprovalRequest;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The approval bypasses of issue 27, run for real: each form must be asked about (the handler
 * refuses) and the file it aimed at must still hold its content afterwards.
 */
@ExtendWith(DockerEngineRequired.class)
class GuardRailsIT {
  static final String PRECIOUS = "precious";
  static Sandbox sandbox;
  static final List<ApprovalRequest> asked = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() {
    sandbox =
        Sandbox.create(
            SandboxConfig.builder()
                .approvals(
                    ApprovalPolicy.builder()
                        .fileDeletion(Action.ASK)
                        .systemModification(Action.ASK)
                        .timeout(Duration.ofSeconds(5))
                        .build())
                .approvalHandler(
                    r -> {
                      asked.add(r);
                      return CompletableFuture.completedFuture(
                          new ApprovalDecision(false, "refused by test", "tester"));
                    })
                .build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.destroy();
    }
  }

  @BeforeEach
  void reset() {
    sandbox.files().write("keep.txt", PRECIOUS);
    sandbox.files().write("sub/keep.txt", PRECIOUS);
    asked.clear();
  }

  static void assertKept() {
    assertThat(sandbox.files().readString("keep.txt")).isEqualTo(PRECIOUS);
    assertThat(sandbox.files().readString("sub/keep.txt")).isEqualTo(PRECIOUS);
  }

  @Test
  void aShellCommandLongerThanTheRulesReadIsRefusedAndNothingRuns() {
    assertThatThrownBy(() -> sandbox.exec(" ".repeat(66_000) + "rm -f /workspace/keep.txt"))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("longer than");
    assertKept();
  }

  @ParameterizedTest(name = "[{index}] {0}")
  @ValueSource(
      strings = {
        "timeout 5s rm -f keep.txt",
        "env -u X rm -f keep.txt",
        "exec -a name rm -f keep.txt",
        "stdbuf -o0 rm -f keep.txt",
        "setsid -w rm -f keep.txt",
        "flock /tmp/lock rm -f keep.txt",
        "nice -n 5 rm -f keep.txt",
        "find . -name keep.txt -execdir rm {} \\;",
        "/bin/r[m] -f keep.txt",
        "{rm,-f,keep.txt}",
        "$'\\x72m' -f keep.txt",
        "sh -c 'rm -f keep.txt'",
        "echo \"$(rm -f keep.txt)\"",
        "tar -cf /tmp/a.tar --remove-files keep.txt",
        "cp -t /workspace/sub keep.txt --remove-destination; sed --in-place s/p/q/ /etc/hostname",
      })
  void wrappedAndSpelledOutShellDeletionsAreAskedAndDoNotRun(String command) {
    assertThatThrownBy(() -> sandbox.exec(command))
        .isInstanceOf(ApprovalDeniedException.class)
        .hasMessageContaining("refused by test");
    assertThat(asked).hasSize(1);
    assertKept();
  }

  @ParameterizedTest(name = "[{index}] {0}")
  @ValueSource(
      strings = {
        "open('new.txt', 'w').write('n')\nos.replace('new.txt', 'keep.txt')",
        "open('new.txt', 'w').write('n')\nos.rename('new.txt', 'sub/keep.txt')",
        "open('new.txt', 'w').write('n')\nshutil.move('new.txt', 'keep.txt')",
        "open('keep.txt', 'w')",
        "open('sub/keep.txt', 'wb').close()",
        "pathlib.Path('keep.txt').write_text('')",
        "os.close(os.open('keep.txt', os.O_WRONLY | os.O_TRUNC))",
        "os.truncate('keep.txt', 0)",
        "f = open('keep.txt', 'r+')\nos.ftruncate(f.fileno(), 1)",
        "ctypes.CDLL(None).unlink(b'/workspace/keep.txt')",
        "ctypes.CDLL(None).syscall(263, -100, b'/workspace/keep.txt', 0)",
        "subprocess.run('true' + ' ' * 2000 + '; rm -f /workspace/keep.txt', shell=True)",
      })
  void pythonFormsThatDestroyAFilesContentAreAskedAndRefused(String code) {
    ExecResult r =
        sandbox.runCode(
            "import os, shutil, pathlib, ctypes, subprocess\ntry:\n"
                + code.indent(4)
                + "except PermissionError as e:\n    print('refused:', e)\n");
    assertThat(r.error()).isNull();
    assertThat(r.stdout()).contains("refused:").contains("was denied");
    assertThat(asked).isNotEmpty();
    assertKept();
  }

  @Test
  void pythonWritesThatDestroyNothingGoAheadWithoutAQuestion() {
    ExecResult r =
        sandbox.runCode(
            "import os\nopen('fresh.txt', 'w').write('a')\nopen('keep.txt', 'a').close()\n"
                + "open('other.txt', 'w').write('b')\nos.replace('other.txt', 'moved.txt')\n"
                + "open('empty.txt', 'w').close()\nopen('empty.txt', 'w').write('c')\n"
                + "print(open('fresh.txt').read(), open('moved.txt').read())");
    assertThat(r.error()).isNull();
    assertThat(r.stdout()).contains("a b");
    assertThat(asked).isEmpty();
    assertKept();
  }
}
