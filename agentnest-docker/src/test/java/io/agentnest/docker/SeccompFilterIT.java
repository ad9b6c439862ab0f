package io.agentnest.docker;

import static io.agentnest.docker.SeccompFilters.AUDIT_ARCH_I386;
import static io.agentnest.docker.SeccompFilters.AUDIT_ARCH_X86_64;
import static io.agentnest.docker.SeccompFilters.X32_SYSCALL_BIT;
import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The seccomp filter runc really installed in a sandbox, read back from the kernel and run on
 * system calls through every x86 ABI. The escape suite attacks through int 0x80 where the kernel
 * serves it; this test also covers hosts whose kernel does not (this project's VM refuses int 0x80
 * before seccomp is asked), because it asks the filter itself.
 */
@ExtendWith(DockerEngineRequired.class)
class SeccompFilterIT {
  static Sandbox sandbox;
  static SeccompFilters filters;

  @BeforeAll
  static void start() throws Exception {
    if (!System.getProperty("os.arch").equals("amd64")) {
      DockerEngineRequired.missing("an x86_64 host", "the ABIs checked here are x86's");
    }
    if (!Files.readString(Path.of("/proc/self/status")).matches("(?s).*\\nUid:\\s+0\\s.*")) {
      DockerEngineRequired.missing(
          "root on the host", "reading a process's seccomp filter needs CAP_SYS_ADMIN");
    }
    sandbox = Sandbox.create(SandboxConfig.defaults());
    long pid =
        DockerEngine.connect()
            .client()
            .inspectContainerCmd(sandbox.id())
            .exec()
            .getState()
            .getPidLong();
    filters = SeccompFilters.of(pid);
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  private static String i386(int nr, long... args) {
    return SeccompFilters.name(filters.decide(AUDIT_ARCH_I386, nr, args));
  }

  private static String x86_64(int nr, long... args) {
    return SeccompFilters.name(filters.decide(AUDIT_ARCH_X86_64, nr, args));
  }

  @Test
  void theSandboxHasOneFilterFromRunc() {
    assertThat(filters.count()).isEqualTo(1);
  }

  @Test
  void everyI386CallIsKilledWhateverItIs() {
    // socketcall(SYS_SOCKET), socket(AF_VSOCK), ipc, getpid, and calls the native ABI refuses.
    assertThat(i386(102, 1, 0x1000)).isEqualTo("KILL_THREAD");
    assertThat(i386(359, 40, 1, 0)).isEqualTo("KILL_THREAD");
    assertThat(i386(117, 23, 0, 0)).isEqualTo("KILL_THREAD");
    assertThat(i386(20)).isEqualTo("KILL_THREAD");
    assertThat(i386(310, 0x10000000)).isEqualTo("KILL_THREAD");
    assertThat(i386(438, 3, 0, 0)).isEqualTo("KILL_THREAD");
  }

  @Test
  void everyX32CallIsKilled() {
    assertThat(x86_64(X32_SYSCALL_BIT | 39)).isEqualTo("KILL_THREAD");
    assertThat(x86_64(X32_SYSCALL_BIT | 41, 40, 1, 0)).isEqualTo("KILL_THREAD");
  }

  @Test
  void nativeCallsKeepTheirRules() {
    assertThat(x86_64(39)).isEqualTo("ALLOW"); // getpid
    assertThat(x86_64(41, 2, 1, 0)).isEqualTo("ALLOW"); // socket(AF_INET)
    assertThat(x86_64(41, 40, 1, 0)).isEqualTo("ERRNO(1)"); // socket(AF_VSOCK)
    assertThat(x86_64(41, 16, 3, 0)).isEqualTo("ERRNO(1)"); // socket(AF_NETLINK)
    assertThat(x86_64(434, 1, 0)).isEqualTo("ERRNO(38)"); // pidfd_open
    assertThat(x86_64(438, 3, 0, 0)).isEqualTo("ERRNO(38)"); // pidfd_getfd
    assertThat(x86_64(440, 3, 0, 0, 0, 0)).isEqualTo("ERRNO(1)"); // process_madvise
    assertThat(x86_64(101, 16, 1)).isEqualTo("ERRNO(1)"); // ptrace
  }
}
