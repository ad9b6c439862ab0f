package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import io.agentnest.ExecResult;
import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A read-only workspace is enforced by the kernel: whatever the code in the sandbox does (also what
 * gets around the Python guard rail: ctypes, raw system calls, a second interpreter), nothing in
 * /workspace is created, changed or deleted. The workspace here holds a file the image put there,
 * writable by everyone as far as permissions go, so that only the read-only mount can refuse.
 */
@ExtendWith(DockerEngineRequired.class)
class ReadOnlyWorkspaceIT {
  static final String IMAGE = "agentnest-it/read-only-workspace:latest";
  static final String CONTENT = "a,b\n1,2\n";
  static Sandbox sb;

  @BeforeAll
  static void start() throws Exception {
    DockerClient c = DockerEngine.connect().client();
    String id =
        c.createContainerCmd(SandboxConfig.DEFAULT_IMAGE)
            .withCmd(
                "python3",
                "-c",
                "import os\nos.makedirs('/workspace/data', exist_ok=True)\n"
                    + "open('/workspace/data/in.csv', 'w').write('a,b\\n1,2\\n')\n"
                    + "for p in ('/workspace', '/workspace/data'): os.chmod(p, 0o777)\n"
                    + "os.chmod('/workspace/data/in.csv', 0o666)\n")
            .withUser("0:0")
            .withNetworkDisabled(true)
            .withHostConfig(
                HostConfig.newHostConfig().withLogConfig(new LogConfig(LogConfig.LoggingType.NONE)))
            .exec()
            .getId();
    try {
      c.startContainerCmd(id).exec();
      assertThat(c.waitContainerCmd(id).start().awaitStatusCode()).isZero();
      c.commitCmd(id).withRepository("agentnest-it/read-only-workspace").withTag("latest").exec();
    } finally {
      c.removeContainerCmd(id).withForce(true).exec();
    }
    sb = Sandbox.create(SandboxConfig.builder().image(IMAGE).readOnlyWorkspace(true).build());
  }

  @AfterAll
  static void stop() {
    if (sb != null) {
      sb.destroy();
    }
    try {
      DockerEngine.connect().client().removeImageCmd(IMAGE).withForce(true).exec();
    } catch (RuntimeException e) {
      // a sandbox of a failed test may still use it; 'docker rmi' it by hand
    }
  }

  static void assertUnchanged() {
    ExecResult r = sb.exec("ls -A /workspace /workspace/data; cat /workspace/data/in.csv");
    assertThat(r.stdout()).isEqualTo("/workspace:\ndata\n\n/workspace/data:\nin.csv\n" + CONTENT);
  }

  @ParameterizedTest(name = "[{index}] {0}")
  @ValueSource(
      strings = {
        "rm -f /workspace/data/in.csv",
        "echo x > /workspace/data/in.csv",
        "echo x >> /workspace/data/in.csv",
        "touch /workspace/new",
        "mkdir /workspace/dir",
        "mv /workspace/data/in.csv /workspace/data/moved.csv",
        "cp /etc/hostname /workspace/data/in.csv",
        "truncate -s 0 /workspace/data/in.csv",
        "python3 -c \"import os; os.remove('/workspace/data/in.csv')\"",
        "python3 -c \"open('/workspace/data/in.csv', 'w')\"",
        "python3 -c \"import ctypes; l = ctypes.CDLL(None); import sys;"
            + " sys.exit(1 if l.unlink(b'/workspace/data/in.csv') == -1 else 0)\"",
        "python3 -c \"import ctypes; l = ctypes.CDLL(None); import sys;"
            + " sys.exit(1 if l.syscall(263, -100, b'/workspace/data/in.csv', 0) == -1 else 0)\"",
      })
  void nothingInTheSandboxCanChangeTheWorkspace(String command) {
    ExecResult r = sb.exec(command + " ; echo rc=$?");
    assertThat(r.output()).doesNotContain("rc=0");
    assertUnchanged();
  }

  @Test
  void aPythonSessionWithItsGuardRailClearedIsRefusedByTheKernel() {
    ExecResult r =
        sb.runCode(
            "import os, errno, ctypes\nout = []\n"
                + "for f in (lambda: os.remove('data/in.csv'),"
                + " lambda: open('data/in.csv', 'w'),"
                + " lambda: os.replace('data/in.csv', 'data/x.csv'),"
                + " lambda: os.truncate('data/in.csv', 0)):\n"
                + "    try:\n        f()\n        out.append('done')\n"
                + "    except OSError as e:\n        out.append(errno.errorcode[e.errno])\n"
                + "out");
    assertThat(r.error()).isNull();
    assertThat(r.result()).isEqualTo("['EROFS', 'EROFS', 'EROFS', 'EROFS']");
    assertUnchanged();
  }

  @Test
  void theFileApiAndUploadsAreRefusedWithAClearError(@TempDir Path host) throws Exception {
    assertThat(sb.files().readString("data/in.csv")).isEqualTo(CONTENT);
    assertThatThrownBy(() -> sb.files().write("data/in.csv", "changed"))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("read-only")
        .hasMessageContaining("/tmp")
        .extracting(e -> ((FileOperationException) e).code())
        .isEqualTo("READ_ONLY");
    assertThatThrownBy(() -> sb.files().delete("data/in.csv"))
        .isInstanceOf(FileOperationException.class)
        .extracting(e -> ((FileOperationException) e).code())
        .isEqualTo("READ_ONLY");
    Path local = Files.writeString(host.resolve("up.txt"), "up");
    assertThatThrownBy(() -> sb.upload(local, "up.txt"))
        .isInstanceOf(FileOperationException.class)
        .extracting(e -> ((FileOperationException) e).code())
        .isEqualTo("READ_ONLY");
    assertUnchanged();
  }

  @Test
  void tmpStaysWritableAndIsHome() {
    ExecResult r = sb.exec("echo scratch > /tmp/s && cat /tmp/s && echo $HOME && pwd");
    assertThat(r.stdout()).isEqualTo("scratch\n/tmp\n/workspace\n");
  }

  @Test
  void forksAndSnapshotsStayReadOnly(@TempDir Path home) {
    try (Sandbox copy = sb.fork()) {
      assertThat(copy.config().readOnlyWorkspace()).isTrue();
      assertThat(copy.exec("cat /workspace/data/in.csv; touch /workspace/x; echo rc=$?").output())
          .contains(CONTENT)
          .doesNotContain("rc=0");
    }
    try (TestHome isolated = TestHome.use(home)) {
      sb.exec("echo kept > /tmp/kept");
      sb.snapshot("ro");
      try (Sandbox restored = Sandbox.restore("ro")) {
        assertThat(restored.config().readOnlyWorkspace()).isTrue();
        assertThat(
                restored
                    .exec(
                        "cat /tmp/kept /workspace/data/in.csv; rm /workspace/data/in.csv;"
                            + " echo rc=$?")
                    .output())
            .contains("kept\n" + CONTENT)
            .doesNotContain("rc=0");
      }
    }
  }

  /** The same on gVisor, whose own kernel enforces the read-only root. */
  @Nested
  @ExtendWith(GvisorRequired.class)
  class OnGvisor {
    @Test
    void theWorkspaceIsReadOnlyForCodeAndFileApiAlike() {
      try (Sandbox g =
          Sandbox.create(
              SandboxConfig.builder()
                  .image(IMAGE)
                  .runtime("gvisor")
                  .readOnlyWorkspace(true)
                  .build())) {
        ExecResult r =
            g.exec(
                "rm -f /workspace/data/in.csv; echo rc=$?; python3 -c \"import ctypes, sys;"
                    + " sys.exit(1 if ctypes.CDLL(None).unlink(b'/workspace/data/in.csv') == -1"
                    + " else 0)\"; echo rc=$?; echo t > /tmp/t && cat /tmp/t");
        assertThat(r.stdout()).isEqualTo("rc=1\nrc=1\nt\n");
        assertThat(g.files().readString("data/in.csv")).isEqualTo(CONTENT);
        assertThatThrownBy(() -> g.files().write("data/new.txt", "x"))
            .isInstanceOf(FileOperationException.class)
            .extracting(e -> ((FileOperationException) e).code())
            .isEqualTo("READ_ONLY");
      }
    }
  }
}
