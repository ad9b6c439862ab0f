package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.command.InspectContainerResponse;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.spi.Labels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** First escape probes: each tries something a hardened sandbox must not allow. */
@ExtendWith(DockerEngineRequired.class)
class SecurityDefaultsIT {
  static Sandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = Sandbox.create(SandboxConfig.defaults());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  private static ExecResult sh(String cmd) {
    return sandbox.exec(cmd);
  }

  @Test
  void runsAsNonRoot() {
    assertThat(sh("id -u").stdout().strip()).isEqualTo("65534");
    assertThat(sandbox.runCode("import os; os.getuid(), os.geteuid()").result())
        .isEqualTo("(65534, 65534)");
  }

  @Test
  void hasNoCapabilitiesAndNoNewPrivs() {
    String status = sh("cat /proc/self/status").stdout();
    assertThat(status).containsPattern("CapEff:\\s+0000000000000000");
    assertThat(status).containsPattern("CapPrm:\\s+0000000000000000");
    assertThat(status).containsPattern("CapBnd:\\s+0000000000000000");
    assertThat(status).containsPattern("NoNewPrivs:\\s+1");
    assertThat(status).containsPattern("Seccomp:\\s+2");
  }

  @Test
  void rootFilesystemIsReadOnlyScratchIsWritable() {
    ExecResult r = sh("touch /usr/evil 2>&1; echo rc=$?");
    assertThat(r.stdout()).contains("Read-only file system").contains("rc=1");
    assertThat(sh("touch /tmp/ok && touch /workspace/ok && echo fine").stdout()).contains("fine");
    String mounts = sh("cat /proc/mounts").stdout();
    assertThat(mounts).containsPattern("tmpfs /tmp tmpfs rw,nosuid,nodev");
    assertThat(mounts).containsPattern("tmpfs /workspace tmpfs rw,nosuid,nodev");
  }

  @Test
  void cannotMountOrUnshare() {
    ExecResult mount = sh("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>&1; echo rc=$?");
    assertThat(mount.stdout()).doesNotContain("rc=0");
    ExecResult unshare =
        sandbox.runCode(
            "import ctypes, os\n"
                + "libc = ctypes.CDLL(None, use_errno=True)\n"
                + "(libc.unshare(0x10000000), ctypes.get_errno())");
    assertThat(unshare.result()).isEqualTo("(-1, 1)");
  }

  @Test
  void seccompDeniesIoUringKeyctlBpfUserfaultfd() {
    ExecResult r =
        sandbox.runCode(
            "import ctypes\n"
                + "libc = ctypes.CDLL(None, use_errno=True)\n"
                + "def call(nr, *a):\n"
                + "    ctypes.set_errno(0)\n"
                + "    return (libc.syscall(nr, *a), ctypes.get_errno())\n"
                + "# x86_64 numbers: io_uring_setup 425, keyctl 250, bpf 321, userfaultfd 323,"
                + " perf_event_open 298, ptrace 101\n"
                + "[call(425, 1, 0), call(250, 0, 0), call(321, 0, 0, 0), call(323, 0),"
                + " call(298, 0, 0, 0, 0, 0), call(101, 16, 1)]");
    assertThat(r.result()).isEqualTo("[(-1, 38), (-1, 1), (-1, 1), (-1, 1), (-1, 1), (-1, 1)]");
  }

  @Test
  void noNetworkButLoopback() {
    String ifaces = sh("ls /sys/class/net").stdout().strip();
    assertThat(ifaces).isEqualTo("lo");
    ExecResult connect =
        sandbox.runCode(
            "import socket\n"
                + "s = socket.socket(); s.settimeout(2)\n"
                + "try:\n"
                + "    s.connect(('1.1.1.1', 80)); r = 'connected'\n"
                + "except OSError as e:\n"
                + "    r = type(e).__name__\n"
                + "r");
    assertThat(connect.result()).isNotEqualTo("'connected'");
    ExecResult raw =
        sandbox.runCode(
            "import socket\n"
                + "try:\n"
                + "    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); r = 'open'\n"
                + "except OSError as e:\n"
                + "    r = e.errno\n"
                + "r");
    assertThat(raw.result()).isNotEqualTo("'open'");
  }

  @Test
  void hostInterfacesNotReachable() {
    assertThat(sh("cat /proc/kcore > /dev/null 2>&1 && echo READ || echo denied").stdout())
        .contains("denied");
    assertThat(sh("ls -la /var/run/docker.sock /run/docker.sock 2>&1").stdout())
        .contains("No such file");
    // The sandbox's environment is only what AgentNest set: nothing of the host's leaks in.
    String env = sh("tr '\\0' '\\n' < /proc/1/environ; env").stdout();
    assertThat(env)
        .doesNotContain("HOME=/root")
        .doesNotContain("JAVA_HOME")
        .contains("HOME=/workspace");
  }

  @Test
  void bulkLinkDirectoryIsReadOnlyAndNothingListensOutsideAFork() {
    assertThat(sh("touch /run/agentnest/x 2>&1; echo rc=$?").stdout())
        .contains("Read-only")
        .doesNotContain("rc=0");
    assertThat(sh("ls -A /run/agentnest | wc -l").stdout().strip()).isEqualTo("0");
    assertThat(
            sandbox
                .runCode(
                    "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n"
                        + "    s.connect('/run/agentnest/bulk.sock'); r = 'connected'\n"
                        + "except OSError as e:\n    r = type(e).__name__\nr")
                .result())
        .isIn("'FileNotFoundError'", "'ConnectionRefusedError'");
  }

  @Test
  void sandboxCodeCannotSpeakOnTheAgentsChannel() {
    // Code runs as the agent's uid. It tries every fd of pid 1 and of the agent (its session's
    // parent) and writes a forged 'expired' frame into whatever opens: before the fix, pid 1
    // (Docker's init) and the agent were dumpable and their channel pipes opened.
    ExecResult r =
        sandbox.runCode(
            "import json, os, struct\n"
                + "h = json.dumps({'ev': 'expired', 'expires_at': 0}).encode()\n"
                + "frame = b'\\xa9N' + struct.pack('>II', len(h), 0) + h\n"
                + "opened = []\n"
                + "for pid in (1, os.getppid()):\n"
                + "    for n in range(32):\n"
                + "        try:\n"
                + "            fd = os.open('/proc/%d/fd/%d' % (pid, n), os.O_WRONLY | os.O_NONBLOCK)\n"
                + "        except OSError:\n"
                + "            continue\n"
                + "        opened.append((pid, n))\n"
                + "        try:\n"
                + "            os.write(fd, frame)\n"
                + "        except OSError:\n"
                + "            pass\n"
                + "        os.close(fd)\n"
                + "opened");
    assertThat(r.result()).isEqualTo("[]");
    assertThat(sandbox.runCode("6 * 7").result()).isEqualTo("42");
    assertThat(sandbox.isAlive()).isTrue();
    // pid 1 is AgentNest's own bootstrap, not dumpable: its /proc entries belong to root.
    assertThat(sh("stat -c '%u %n' /proc/1/fd /proc/1/mem 2>&1").stdout())
        .contains("0 /proc/1/fd", "0 /proc/1/mem");
  }

  @Test
  void bulkLinkDirectoryIsClosedToOtherLocalUsers() throws Exception {
    // Any local user could connect to the fork socket (0666 in a 0755 directory) and end a fork.
    String bulk =
        DockerEngine.connect()
            .client()
            .inspectContainerCmd(sandbox.id())
            .exec()
            .getConfig()
            .getLabels()
            .get(Labels.BULK_DIR);
    Path dir = Path.of(bulk);
    assertThat(Integer.toOctalString((Integer) Files.getAttribute(dir, "unix:mode") & 0777))
        .isEqualTo("750");
    assertThat(Files.getAttribute(dir, "unix:gid")).isEqualTo(65534);
    // Another host user cannot even look inside; the sandbox's own group can.
    assertThat(runAs("4242:4242", "ls", bulk)).contains("Permission denied");
    assertThat(runAs("4242:65534", "ls", bulk)).doesNotContain("Permission denied");
  }

  /** Output and exit status of a command run on the host as {@code uid:gid} (needs root). */
  private static String runAs(String uidGid, String... cmd) throws Exception {
    String[] ug = uidGid.split(":");
    List<String> argv = new ArrayList<>(List.of("setpriv", "--reuid=" + ug[0], "--regid=" + ug[1]));
    argv.add("--clear-groups");
    argv.addAll(List.of(cmd));
    Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readNBytes(1 << 16), StandardCharsets.UTF_8);
    assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
    return out + "exit " + p.exitValue();
  }

  @Test
  void containerIsConfiguredHardenedAndLogsNothing() {
    DockerEngine engine = DockerEngine.connect();
    InspectContainerResponse c = engine.client().inspectContainerCmd(sandbox.id()).exec();
    assertThat(c.getHostConfig().getLogConfig().getType().getType()).isEqualTo("none");
    assertThat(c.getHostConfig().getReadonlyRootfs()).isTrue();
    assertThat(c.getHostConfig().getNetworkMode()).isEqualTo("none");
    assertThat(c.getHostConfig().getPidsLimit()).isEqualTo(256L);
    assertThat(c.getHostConfig().getMemory()).isEqualTo(512L << 20);
    // One host directory only: the sandbox's own bulk link, read-only, holding nothing but the
    // socket the host listens on during a fork.
    String bulk = c.getConfig().getLabels().get(Labels.BULK_DIR);
    assertThat(bulk).matches("/run/agentnest/bulk/[0-9a-f]{32}");
    assertThat(c.getHostConfig().getBinds())
        .extracting(Object::toString)
        .containsExactly(bulk + ":/run/agentnest:ro");
    assertThat(c.getMounts())
        .allSatisfy(
            m -> {
              if (m.getSource() != null && !m.getSource().isEmpty()) {
                assertThat(m.getSource()).isEqualTo(bulk);
                assertThat(m.getRW()).isFalse();
              }
            });
    assertThat(c.getConfig().getLabels())
        .containsEntry(Labels.MANAGED, "true")
        .containsKeys(Labels.OWNER, Labels.CREATED, Labels.EXPIRES);
  }
}
