package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.PythonSession;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Hostile workloads: each is stopped at its limit, the result names the limit, the sandbox keeps
 * working afterwards, and a neighbouring sandbox keeps answering meanwhile. Every workload is
 * bounded by a timeout or a count.
 */
@ExtendWith(DockerEngineRequired.class)
class LimitsIT {
  static Sandbox neighbour;

  @BeforeAll
  static void start() {
    neighbour = Sandbox.create(SandboxConfig.builder().label("test", "neighbour").build());
    neighbour.runCode("warm = True");
  }

  @AfterAll
  static void stop() {
    if (neighbour != null) {
      neighbour.close();
    }
  }

  static Sandbox hostile(SandboxConfig.Builder b) {
    return Sandbox.create(b.label("test", "hostile").build());
  }

  static ExecOptions timeout(int seconds) {
    return ExecOptions.builder().timeout(Duration.ofSeconds(seconds)).build();
  }

  /** Runs the workload while checking that the neighbour still answers its session calls. */
  static ExecResult whileNeighbourAnswers(Supplier<ExecResult> workload) throws Exception {
    CompletableFuture<ExecResult> w = CompletableFuture.supplyAsync(workload);
    int answered = 0;
    for (int i = 0; i < 5 && !w.isDone(); i++) {
      ExecResult r =
          neighbour.runCode(
              "sum(range(1000))", ExecOptions.builder().timeout(Duration.ofSeconds(10)).build());
      assertThat(r.result()).as("neighbour answers during the workload").isEqualTo("499500");
      answered++;
      Thread.sleep(200);
    }
    assertThat(answered).isPositive();
    return w.get(90, TimeUnit.SECONDS);
  }

  @Test
  void forkBombHitsThePidsLimitAndIsCleanedUp() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder().pidsLimit(64))) {
      ExecResult r =
          whileNeighbourAnswers(
              () -> sb.exec("bomb() { bomb | bomb & }; bomb; sleep 3", timeout(6)));
      assertThat(r.limit()).isIn(Limit.PIDS, Limit.TIMEOUT);
      assertThat(r.limit()).isEqualTo(Limit.PIDS);
      ExecResult after = sb.exec("echo alive; ps -e --no-headers | wc -l", timeout(10));
      assertThat(after.stdout()).startsWith("alive");
      assertThat(Integer.parseInt(after.stdout().lines().skip(1).findFirst().orElseThrow().strip()))
          .as("bomb processes are gone")
          .isLessThan(20);
    }
  }

  @Test
  void memoryBombInShellIsKilledAndReported() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder().memory("128m"))) {
      ExecResult r =
          whileNeighbourAnswers(
              () -> sb.exec("python3 -c \"b = b'x' * (1024 ** 3)\"", timeout(60)));
      assertThat(r.limit()).isEqualTo(Limit.MEMORY);
      assertThat(r.exitCode()).isEqualTo(137);
      assertThat(sb.exec("echo alive").stdout()).isEqualTo("alive\n");
    }
  }

  @Test
  void memoryBombInSessionRestartsOnlyThatSession() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder().memory("128m"))) {
      sb.runCode("before = 1");
      PythonSession other = sb.pythonSession("other");
      other.run("kept = 'yes'");
      ExecResult r = whileNeighbourAnswers(() -> sb.runCode("y = b'x' * (1024 ** 3)", timeout(60)));
      assertThat(r.limit()).isEqualTo(Limit.MEMORY);
      assertThat(r.stateLost()).isTrue();
      assertThat(r.error()).isNotNull();
      assertThat(r.error().value()).contains("memory limit");
      // The session restarted empty; the other session and the sandbox are untouched.
      assertThat(sb.runCode("'before' in globals()").result()).isEqualTo("False");
      assertThat(other.run("kept").result()).isEqualTo("'yes'");
      assertThat(sb.exec("echo alive").stdout()).isEqualTo("alive\n");
    }
  }

  @Test
  void threadBombIsStoppedByThePidsLimit() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder().pidsLimit(64))) {
      PythonSession s = sb.pythonSession("threads");
      ExecResult r =
          whileNeighbourAnswers(
              () ->
                  s.run(
                      "import threading, time\n"
                          + "ts = []\n"
                          + "for i in range(5000):\n"
                          + "    t = threading.Thread(target=time.sleep, args=(30,), daemon=True)\n"
                          + "    t.start(); ts.append(t)\n",
                      timeout(30)));
      assertThat(r.error()).isNotNull();
      assertThat(r.error().name()).isEqualTo("RuntimeError");
      assertThat(r.limit()).isEqualTo(Limit.PIDS);
      s.close(); // ends the interpreter and its threads
      assertThat(sb.exec("echo alive", timeout(10)).stdout()).isEqualTo("alive\n");
    }
  }

  @Test
  void fdExhaustionStaysInsideTheProcess() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder())) {
      ExecResult r =
          sb.runCode(
              "fs = []\n"
                  + "try:\n"
                  + "    for i in range(100000):\n"
                  + "        fs.append(open('/dev/null'))\n"
                  + "except OSError as e:\n"
                  + "    err = e.errno\n"
                  + "(err, len(fs) < 5000)");
      assertThat(r.result()).isEqualTo("(24, True)");
      sb.runCode("[f.close() for f in fs]; del fs");
      assertThat(sb.exec("echo alive").stdout()).isEqualTo("alive\n");
      assertThat(sb.files().write("after.txt", "ok").size()).isEqualTo(2);
    }
  }

  @Test
  void fillingTmpAndWorkspaceStopsAtTheirSize() throws Exception {
    try (Sandbox sb =
        hostile(SandboxConfig.builder().tmpSizeBytes(16L << 20).workspaceSizeBytes(32L << 20))) {
      ExecResult tmp = sb.exec("dd if=/dev/zero of=/tmp/fill bs=1M count=100", timeout(30));
      assertThat(tmp.exitCode()).isNotZero();
      assertThat(tmp.stderr()).contains("No space left");
      assertThat(tmp.limit()).isEqualTo(Limit.DISK);
      ExecResult ws = sb.exec("dd if=/dev/zero of=/workspace/fill bs=1M count=100", timeout(30));
      assertThat(ws.limit()).isEqualTo(Limit.DISK);
      assertThat(sb.exec("df -k /workspace | tail -1").stdout()).contains("32768");
      sb.exec("rm -f /tmp/fill /workspace/fill");
      assertThat(sb.exec("echo alive > /workspace/a && cat /workspace/a").stdout())
          .isEqualTo("alive\n");
    }
  }

  @Test
  void outputFloodIsStoppedAtTheCapAndNothingIsLogged() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder().maxOutputBytes(2L << 20))) {
      // An endless flood: only the output cap can stop it (the timeout is far away).
      ExecResult r = whileNeighbourAnswers(() -> sb.exec("cat /dev/zero", timeout(120)));
      assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
      assertThat(r.truncated()).isTrue();
      assertThat(r.stdout().length()).isLessThanOrEqualTo(2 << 20);
      assertThat(r.duration()).isLessThan(Duration.ofSeconds(60));
      ExecResult py =
          sb.runCode("import sys\nwhile True:\n    sys.stdout.write('z' * 65536)\n", timeout(120));
      assertThat(py.limit()).isEqualTo(Limit.OUTPUT);
      assertThat(py.stateLost()).isFalse();
      assertThat(sb.runCode("2 + 2").result()).isEqualTo("4");
      String logPath =
          DockerEngine.connect().client().inspectContainerCmd(sb.id()).exec().getLogPath();
      assertThat(logPath).as("the runtime keeps no log of sandbox output").isNullOrEmpty();
    }
  }

  @Test
  void busyLoopsAreHeldToTheCpuLimit() throws Exception {
    try (Sandbox sb = hostile(SandboxConfig.builder().cpus(0.5))) {
      String quota =
          sb.exec(
                  "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu.max 2>/dev/null"
                      + " | head -1")
              .stdout()
              .strip();
      assertThat(quota).startsWith("50000");
      ExecResult r =
          whileNeighbourAnswers(
              () ->
                  sb.exec(
                      "for i in 1 2 3 4; do (while :; do :; done) & done; sleep 4; kill 0",
                      timeout(8)));
      assertThat(r.limit()).isIn(null, Limit.TIMEOUT);
      assertThat(sb.exec("echo alive", timeout(10)).stdout()).isEqualTo("alive\n");
    }
  }

  @Test
  void timeoutKillsTheWholeTreeAndKeepsFiles() {
    try (Sandbox sb = hostile(SandboxConfig.builder())) {
      sb.files().write("keep.txt", "kept");
      ExecResult r =
          sb.exec(
              "(sleep 100 & sleep 100 & wait) & trap '' TERM; sleep 100",
              ExecOptions.builder().timeout(Duration.ofMillis(500)).build());
      assertThat(r.limit()).isEqualTo(Limit.TIMEOUT);
      assertThat(sb.exec("ps -e -o comm= | grep -c sleep || true").stdout().strip()).isEqualTo("0");
      assertThat(sb.files().readString("keep.txt")).isEqualTo("kept");
    }
  }

  @Test
  void sessionStuckInCodeThatIgnoresInterruptsIsRestartedAndSaysSo() {
    try (Sandbox sb = hostile(SandboxConfig.builder())) {
      sb.runCode("x = 41");
      ExecResult r =
          sb.runCode(
              "import signal, time\n"
                  + "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])\n"
                  + "time.sleep(60)",
              ExecOptions.builder().timeout(Duration.ofMillis(500)).build());
      assertThat(r.limit()).isEqualTo(Limit.TIMEOUT);
      assertThat(r.stateLost()).isTrue();
      assertThat(r.error().value()).contains("restarted");
      assertThat(sb.runCode("'x' in globals()").result()).isEqualTo("False");
      assertThat(sb.runCode("x = 1; x + 1").result()).isEqualTo("2");
    }
  }
}
