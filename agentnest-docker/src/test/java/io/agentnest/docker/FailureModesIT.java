package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ExecOptions;
import io.agentnest.ImageNotFoundException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.docker.internal.DockerEngine;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Bad inputs and broken pieces: each gives a clear error and nothing hangs or leaks. */
@ExtendWith(DockerEngineRequired.class)
class FailureModesIT {

  @Test
  void missingImageSaysHowToGetIt() {
    assertThatThrownBy(
            () -> Sandbox.create(SandboxConfig.builder().image("agentnest-test/absent:1").build()))
        .isInstanceOf(ImageNotFoundException.class)
        .hasMessageContaining("agentnest-test/absent:1")
        .hasMessageContaining("docker pull");
    // AgentNest's own names are never pulled (no registry serves them): the message says how to
    // build them instead.
    assertThatThrownBy(
            () ->
                Sandbox.create(
                    SandboxConfig.builder().image("agentnest/python:absent-tag-1").build()))
        .isInstanceOf(ImageNotFoundException.class)
        .hasMessageContaining("agentnest image build --tag agentnest/python:absent-tag-1")
        .hasMessageNotContaining("docker pull");
  }

  @Test
  void imageWithoutPythonIsRefusedAndLeavesNothing() throws Exception {
    DockerEngine engine = DockerEngine.connect();
    String image = "agentnest-test/nopython:1";
    if (!engine.imageExists(image)) {
      // An image whose filesystem is one empty directory: no python3, no shell.
      ByteArrayOutputStream tar = new ByteArrayOutputStream();
      try (TarArchiveOutputStream out = new TarArchiveOutputStream(tar)) {
        out.putArchiveEntry(new TarArchiveEntry("tmp/"));
        out.closeArchiveEntry();
      }
      Process p = new ProcessBuilder("docker", "import", "-", image).start();
      p.getOutputStream().write(tar.toByteArray());
      p.getOutputStream().close();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(new String(p.getErrorStream().readAllBytes())).isZero();
    }
    int before = Sandbox.list().size();
    assertThatThrownBy(() -> Sandbox.create(SandboxConfig.builder().image(image).build()))
        .isInstanceOf(ImageNotFoundException.class)
        .hasMessageContaining("python3");
    assertThat(Sandbox.list()).hasSize(before);
  }

  @Test
  void unknownRuntimeFailsClosed() {
    assertThatThrownBy(
            () -> Sandbox.create(SandboxConfig.builder().runtime("no-such-runtime").build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("no-such-runtime")
        .hasMessageContaining("daemon.json");
  }

  @Test
  void agentKilledMidCallFailsThePendingCallWithReason() throws Exception {
    try (Sandbox sb = Sandbox.create()) {
      CompletableFuture<Object> call =
          CompletableFuture.supplyAsync(
              () ->
                  sb.exec(
                      "sleep 20", ExecOptions.builder().timeout(Duration.ofSeconds(60)).build()));
      Thread.sleep(300);
      // The exec's parent is the agent: kill it from inside, as hostile code could.
      try {
        sb.exec("kill -9 $PPID");
      } catch (SandboxClosedException expected) {
        // this call dies with the agent too
      }
      assertThatThrownBy(() -> call.get(15, TimeUnit.SECONDS))
          .hasCauseInstanceOf(SandboxClosedException.class)
          .hasMessageContaining("agent");
      assertThat(sb.isAlive()).isFalse();
      assertThatThrownBy(() -> sb.runCode("1")).isInstanceOf(SandboxClosedException.class);
    }
  }

  @Test
  void garbageFromSandboxCodeCannotReachTheChannel() {
    // Hostile code tries to write junk into the agent's channel pipes. It once could (the agent
    // was dumpable), and the channel then died of a protocol violation; now the agent's /proc
    // entries are root's and the sandbox carries on. How the host treats garbage that does
    // arrive is AgentChannelTest.garbageBytesAreAProtocolViolation.
    try (Sandbox sb = Sandbox.create()) {
      String code =
          "import os\n"
              + "agent = os.getppid()\n"
              + "written = 0\n"
              + "try:\n"
              + "    fds = os.listdir('/proc/%d/fd' % agent)\n"
              + "except OSError:\n"
              + "    fds = [str(n) for n in range(16)]\n"
              + "for fd in fds:\n"
              + "    try:\n"
              + "        f = os.open('/proc/%d/fd/%s' % (agent, fd), os.O_WRONLY | os.O_NONBLOCK)\n"
              + "        os.write(f, b'GARBAGE' * 100)\n"
              + "        written += 1\n"
              + "    except OSError:\n"
              + "        pass\n"
              + "print('written', written)\n";
      sb.files().write("evil.py", code);
      assertThat(sb.exec("exec python3 evil.py").stdout()).isEqualTo("written 0\n");
      assertThat(sb.exec("echo still here").stdout()).isEqualTo("still here\n");
    }
  }

  @Test
  void connectReattachesAndListShowsIt() {
    Sandbox sb = Sandbox.create();
    try {
      sb.runCode("remember = 'me'");
      assertThat(Sandbox.list()).extracting(SandboxInfo::id).contains(sb.id());
      sb.detach();
      try (Sandbox again = Sandbox.connect(sb.id().substring(0, 12))) {
        assertThat(again.id()).isEqualTo(sb.id());
        assertThat(again.runCode("remember").result()).isEqualTo("'me'");
      }
      assertThat(Sandbox.list()).extracting(SandboxInfo::id).doesNotContain(sb.id());
    } finally {
      sb.destroy();
    }
    assertThatThrownBy(() -> Sandbox.connect(sb.id()))
        .isInstanceOf(SandboxNotFoundException.class)
        .hasMessageContaining("agentnest ls");
  }

  @Test
  void destroyIsIdempotentAndUseAfterDestroyIsClear() {
    Sandbox sb = Sandbox.create();
    sb.destroy();
    sb.destroy();
    sb.close();
    assertThatThrownBy(() -> sb.exec("true"))
        .isInstanceOf(SandboxClosedException.class)
        .hasMessageContaining("destroyed");
  }

  @Test
  void deadDaemonNamesTheSocketAndDoctor() throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
            ProcessHandle.current().info().command().orElse("java"),
            "-cp",
            System.getProperty("java.class.path"),
            DeadDaemonProbe.class.getName());
    pb.environment().put("DOCKER_HOST", "unix:///tmp/agentnest-no-such-docker.sock");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(out)
        .contains(BackendUnavailableException.class.getSimpleName())
        .contains("/tmp/agentnest-no-such-docker.sock")
        .contains("agentnest doctor");
  }

  /** Runs in a child JVM whose DOCKER_HOST points at nothing. */
  public static final class DeadDaemonProbe {
    public static void main(String[] args) {
      try {
        Sandbox.create();
        System.out.println("UNEXPECTED: created");
      } catch (AgentNestException e) {
        System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
      }
    }
  }
}
