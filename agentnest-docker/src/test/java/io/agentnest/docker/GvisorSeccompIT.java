package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.docker.internal.RunscRegistration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * AgentNest's seccomp profile inside gVisor: applied by the Sentry when runsc runs with {@code
 * --oci-seccomp}, and sandboxes still work (threads, processes) with a runsc that answers every
 * refusal with EPERM.
 */
@ExtendWith({DockerEngineRequired.class, GvisorRequired.class})
class GvisorSeccompIT {
  static Sandbox sandbox;

  @BeforeAll
  static void start() {
    RunscRegistration runsc = RunscRegistration.of(DockerEngine.connect().info()).orElseThrow();
    if (!runsc.appliesOciSeccomp()) {
      DockerEngineRequired.missing(
          "runsc with " + RunscRegistration.OCI_SECCOMP,
          "runsc is registered as "
              + runsc.args()
              + ": run scripts/setup-host.sh (it adds the flag and reloads dockerd)");
    }
    sandbox = Sandbox.create(SandboxConfig.builder().runtime("gvisor").build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void theProfileRefusesInsideTheSentryWhatItRefusesOnRunc() {
    String r =
        sandbox
            .runCode(
                "import ctypes, socket\n"
                    + "libc = ctypes.CDLL(None, use_errno=True)\n"
                    + "def call(nr, *a):\n"
                    + "    ctypes.set_errno(0)\n"
                    + "    return libc.syscall(nr, *a) >= 0\n"
                    + "def sock(fam, typ):\n"
                    + "    try:\n"
                    + "        socket.socket(fam, typ).close(); return True\n"
                    + "    except OSError:\n"
                    + "        return False\n"
                    + "# io_uring_setup, unshare(CLONE_NEWUSER), keyctl, pidfd_open, netlink, vsock\n"
                    + "[call(425, 4, ctypes.create_string_buffer(120)), call(272, 0x10000000),"
                    + " call(250, 0, -3, 0), call(434, 1, 0), sock(16, 3), sock(40, 1)]")
            .result();
    assertThat(r).isEqualTo("[False, False, False, False, False, False]");
  }

  @Test
  void threadsProcessesAndSelectStillWork() {
    // clone3 must answer ENOSYS for glibc to fall back, and select() is pselect6, a name runsc
    // spells differently: both broke sandboxes before the profile was adapted for gVisor.
    String r =
        sandbox
            .runCode(
                "import select, threading, subprocess\n"
                    + "out = [select.select([], [], [], 0)]\n"
                    + "t = threading.Thread(target=out.append, args=('thread',)); t.start(); t.join()\n"
                    + "out.append(subprocess.run(['echo', 'process'], capture_output=True, text=True)"
                    + ".stdout.strip())\n"
                    + "out")
            .result();
    assertThat(r).isEqualTo("[([], [], []), 'thread', 'process']");
  }
}
