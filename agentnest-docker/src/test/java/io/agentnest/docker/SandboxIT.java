package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.Limit;
import io.agentnest.PythonSession;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The backbone against a real engine: sessions, shell, files, results. One shared sandbox. */
@ExtendWith(DockerEngineRequired.class)
class SandboxIT {
  static Sandbox sandbox;

  /** The OCI runtime under test; subclasses run the same tests on another one. */
  static String runtime = "runc";

  @BeforeAll
  static void start() {
    sandbox =
        Sandbox.create(
            SandboxConfig.builder().runtime(runtime).label("test", "sandbox-it").build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void sessionKeepsVariablesImportsAndFunctions() {
    ExecResult r = sandbox.runCode("a = 10; print(a * 2)");
    assertThat(r.output()).isEqualTo("20\n");
    assertThat(r.ok()).isTrue();
    sandbox.runCode("b = a + 1\nimport math\ndef sq(x):\n    return x * x");
    assertThat(sandbox.runCode("b").result()).isEqualTo("11");
    assertThat(sandbox.runCode("sq(b) + math.floor(2.5)").result()).isEqualTo("123");
  }

  @Test
  void lastExpressionValueIsRepr() {
    assertThat(sandbox.runCode("'x' * 3").result()).isEqualTo("'xxx'");
    assertThat(sandbox.runCode("x = 1").result()).isNull();
    assertThat(sandbox.runCode("None").result()).isNull();
  }

  @Test
  void errorsAreResultsWithTraceback() {
    ExecResult r = sandbox.runCode("def f():\n    return 1/0\nf()");
    assertThat(r.ok()).isFalse();
    assertThat(r.error()).isNotNull();
    assertThat(r.error().name()).isEqualTo("ZeroDivisionError");
    assertThat(r.error().value()).isEqualTo("division by zero");
    assertThat(r.error().traceback()).contains("return 1/0").contains("in f");
    ExecResult syntax = sandbox.runCode("def (:");
    assertThat(syntax.error().name()).isEqualTo("SyntaxError");
    // The session survives both
    assertThat(sandbox.runCode("1 + 1").result()).isEqualTo("2");
  }

  @Test
  void stdoutAndStderrSeparated() {
    ExecResult r = sandbox.runCode("import sys\nprint('out')\nprint('err', file=sys.stderr)");
    assertThat(r.stdout()).isEqualTo("out\n");
    assertThat(r.stderr()).isEqualTo("err\n");
  }

  @Test
  void richOutputForValuesThatOfferPng() {
    String code =
        "import base64\n"
            + "class Img:\n"
            + "    def _repr_png_(self):\n"
            + "        return base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')\n"
            + "Img()";
    ExecResult r = sandbox.runCode(code);
    assertThat(r.rich()).hasSize(1);
    assertThat(r.rich().get(0).mimeType()).isEqualTo("image/png");
    byte[] png = r.rich().get(0).data();
    assertThat(new String(png, 1, 3, StandardCharsets.US_ASCII)).isEqualTo("PNG");
  }

  @Test
  void namedSessionsAreIndependent() {
    PythonSession one = sandbox.pythonSession("one");
    PythonSession two = sandbox.pythonSession("two");
    one.run("v = 'one'");
    two.run("v = 'two'");
    assertThat(one.run("v").result()).isEqualTo("'one'");
    assertThat(two.run("v").result()).isEqualTo("'two'");
    two.close();
    assertThat(two.run("'v' in globals()").result()).isEqualTo("False");
  }

  @Test
  void shellExecWithExitCodeCwdAndEnv() {
    ExecResult r = sandbox.exec("echo hi; echo oops >&2; exit 3");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.stdout()).isEqualTo("hi\n");
    assertThat(r.stderr()).isEqualTo("oops\n");
    sandbox.files().mkdir("sub/dir");
    ExecResult cwd =
        sandbox.exec(
            "pwd; echo $GREETING",
            ExecOptions.builder().workdir("sub/dir").env("GREETING", "hello").build());
    assertThat(cwd.stdout()).isEqualTo("/workspace/sub/dir\nhello\n");
    ExecResult argv =
        sandbox.exec(List.of("printf", "%s|", "a b", "$HOME"), ExecOptions.defaults());
    assertThat(argv.stdout()).isEqualTo("a b|$HOME|");
    ExecResult missing = sandbox.exec("no-such-command-xyz");
    assertThat(missing.exitCode()).isEqualTo(127);
    // A working directory that does not exist: the error says so and how to make it.
    assertThatThrownBy(
            () -> sandbox.exec("true", ExecOptions.builder().workdir("no/such/project").build()))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("'no/such/project' does not exist under /workspace")
        .hasMessageContaining("mkdir -p no/such/project");
  }

  @Test
  void stdinIsFedToCommand() {
    ExecResult r = sandbox.exec("wc -c", ExecOptions.builder().stdin("12345".getBytes()).build());
    assertThat(r.stdout().strip()).isEqualTo("5");
  }

  @Test
  void streamingListenerSeesOutputInOrder() {
    List<String> chunks = new ArrayList<>();
    ExecResult r =
        sandbox.exec(
            "for i in 1 2 3; do echo line$i; sleep 0.05; done",
            ExecOptions.builder().onOutput(c -> chunks.add(c.text())).build());
    assertThat(String.join("", chunks)).isEqualTo("line1\nline2\nline3\n");
    assertThat(chunks).hasSizeGreaterThanOrEqualTo(3);
    assertThat(r.stdout()).isEqualTo("line1\nline2\nline3\n");
  }

  @Test
  void fileRoundTripListStatDelete() {
    byte[] data = new byte[3 * 1024 * 1024 + 17];
    for (int i = 0; i < data.length; i++) {
      data[i] = (byte) (i * 31);
    }
    FileInfo w = sandbox.files().write("data/blob.bin", data);
    assertThat(w.size()).isEqualTo(data.length);
    assertThat(sandbox.files().read("data/blob.bin")).isEqualTo(data);
    sandbox.files().write("data/in.csv", "a,b\n1,2\n");
    assertThat(sandbox.files().readString("data/in.csv")).isEqualTo("a,b\n1,2\n");
    assertThat(sandbox.files().list("data"))
        .extracting(FileInfo::path)
        .containsExactly("data/blob.bin", "data/in.csv");
    assertThat(sandbox.files().stat("data").isDirectory()).isTrue();
    // Files written through the API are visible to code, and the other way round
    assertThat(sandbox.exec("cat /workspace/data/in.csv").stdout()).isEqualTo("a,b\n1,2\n");
    sandbox.runCode("open('made.txt', 'w').write('by python')");
    assertThat(sandbox.files().readString("made.txt")).isEqualTo("by python");
    sandbox.files().delete("data/in.csv");
    assertThat(sandbox.files().exists("data/in.csv")).isFalse();
    assertThatThrownBy(() -> sandbox.files().delete("data"))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("recursively");
    sandbox.files().deleteRecursive("data");
    assertThat(sandbox.files().exists("data")).isFalse();
    assertThatThrownBy(() -> sandbox.files().read("nope.txt"))
        .isInstanceOf(FileOperationException.class)
        .satisfies(e -> assertThat(((FileOperationException) e).code()).isEqualTo("NOT_FOUND"));
  }

  @Test
  void hostilePathsAreRefused() {
    for (String p : List.of("/etc/passwd", "../etc/passwd", "a/../../x", "a\0b", "")) {
      assertThatThrownBy(() -> sandbox.files().read(p))
          .as(p)
          .isInstanceOf(FileOperationException.class)
          .satisfies(e -> assertThat(((FileOperationException) e).code()).isEqualTo("BAD_PATH"));
    }
    // Symlinks created by code that lead outside the workspace are refused by the agent
    sandbox.exec("ln -sf /etc/passwd /workspace/link-out; ln -sfn /etc /workspace/dir-out");
    assertThatThrownBy(() -> sandbox.files().read("link-out"))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("outside the workspace");
    assertThatThrownBy(() -> sandbox.files().write("dir-out/evil", "x"))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("outside the workspace");
    assertThatThrownBy(() -> sandbox.files().list("dir-out"))
        .isInstanceOf(FileOperationException.class);
    // A symlink that stays inside is fine
    sandbox.files().write("real.txt", "inside");
    sandbox.exec("ln -sf real.txt /workspace/link-in");
    assertThat(sandbox.files().readString("link-in")).isEqualTo("inside");
  }

  @Test
  void invalidUtf8AndBinaryOutputAreDecodedSafely() {
    ExecResult r = sandbox.exec("printf 'ok \\377\\376 \\000 end'");
    assertThat(r.stdout()).startsWith("ok ").endsWith(" end").contains("\uFFFD");
    ExecResult py = sandbox.runCode("import sys; sys.stdout.buffer.write(b'\\xff\\x00abc'); 1");
    assertThat(py.stdout()).endsWith("abc");
    assertThat(py.result()).isEqualTo("1");
  }

  @Test
  void fiftyMegabytesOfOutputAreCapped() {
    ExecResult r =
        sandbox.exec(
            "head -c 52428800 /dev/zero | tr '\\0' x",
            ExecOptions.builder().maxOutputBytes(1 << 20).timeout(Duration.ofSeconds(30)).build());
    assertThat(r.truncated()).isTrue();
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
    assertThat(r.stdout().length()).isLessThanOrEqualTo(1 << 20);
    ExecResult py =
        sandbox.runCode(
            "import sys\nfor _ in range(200):\n    sys.stdout.write('y' * 262144)\n",
            ExecOptions.builder().maxOutputBytes(1 << 20).build());
    assertThat(py.truncated()).isTrue();
    assertThat(py.stdout().length()).isLessThanOrEqualTo(1 << 20);
    assertThat(sandbox.runCode("2 + 2").result()).isEqualTo("4");
  }

  @Test
  void timeoutsStopTheCallNotTheSandbox() {
    ExecResult r =
        sandbox.exec("sleep 30", ExecOptions.builder().timeout(Duration.ofMillis(300)).build());
    assertThat(r.limit()).isEqualTo(Limit.TIMEOUT);
    sandbox.runCode("kept = 42");
    ExecResult py =
        sandbox.runCode(
            "import time\nwhile True: time.sleep(0.01)",
            ExecOptions.builder().timeout(Duration.ofMillis(300)).build());
    assertThat(py.limit()).isEqualTo(Limit.TIMEOUT);
    assertThat(py.error().name()).isEqualTo("KeyboardInterrupt");
    // The traceback ends at the user's line, not in the worker's signal handler.
    assertThat(py.error().traceback()).contains("time.sleep(0.01)").doesNotContain("_on_sigint");
    assertThat(py.stateLost()).isFalse();
    assertThat(sandbox.runCode("kept").result()).isEqualTo("42");
  }
}
