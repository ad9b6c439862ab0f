package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.docker.internal.KernelSurface.Ia32;
import io.agentnest.docker.internal.KernelSurface.Ia32Probe;
import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.HealthCheck.Status;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KernelSurfaceTest {
  @TempDir Path root;

  private void file(String relative, String content) throws IOException {
    Path p = root.resolve(relative);
    Files.createDirectories(p.getParent());
    Files.writeString(p, content);
  }

  private KernelSurface host(Ia32 state) throws IOException {
    Files.createDirectories(root.resolve("proc/sys"));
    return new KernelSurface(root, () -> new Ia32Probe(state, "probe says " + state));
  }

  @Test
  void ia32OnIsAWarningThatSaysWhatAgentNestDoes() throws IOException {
    HealthCheck c = host(Ia32.ON).ia32();
    assertThat(c.status()).isEqualTo(Status.WARN);
    assertThat(c.detail()).startsWith("on:");
    assertThat(c.fix()).contains("native ABI", "kills the calling thread", "ia32_emulation=0");
  }

  @Test
  void theProbeProgramOutranksTheConfiguration() throws IOException {
    // Built in, but the running kernel refused the 32-bit program (a hypervisor turned it off).
    file("proc/sys/abi/vsyscall32", "1\n");
    HealthCheck c = host(Ia32.OFF).ia32();
    assertThat(c.status()).isEqualTo(Status.OK);
    assertThat(c.detail()).startsWith("off:");
  }

  @Test
  void withoutTheProbeTheKernelConfigurationDecides() throws IOException {
    KernelSurface k = host(Ia32.UNKNOWN);
    file("proc/sys/kernel/osrelease", "6.1.0-test\n");
    file("boot/config-6.1.0-test", "CONFIG_X86_64=y\nCONFIG_IA32_EMULATION=y\n");
    assertThat(k.ia32().status()).isEqualTo(Status.WARN);
    assertThat(k.ia32().detail()).contains("CONFIG_IA32_EMULATION");

    file("proc/cmdline", "quiet ia32_emulation=0 ro\n");
    assertThat(k.ia32().status()).isEqualTo(Status.OK);
    assertThat(k.ia32().detail()).contains("ia32_emulation=0");
  }

  @Test
  void proc_config_gzIsReadWhenThereIsNoBootConfig() throws IOException {
    KernelSurface k = host(Ia32.UNKNOWN);
    try (OutputStream out =
        new GZIPOutputStream(Files.newOutputStream(root.resolve("proc/config.gz")))) {
      out.write(
          "CONFIG_X86_64=y\n# CONFIG_IA32_EMULATION is not set\n".getBytes(StandardCharsets.UTF_8));
    }
    assertThat(k.ia32().status()).isEqualTo(Status.OK);
    assertThat(k.ia32().detail()).contains("without CONFIG_IA32_EMULATION");
  }

  @Test
  void vsockIsFoundByDeviceMiscClassOrModule() throws IOException {
    KernelSurface k = host(Ia32.OFF);
    assertThat(k.vsock().status()).isEqualTo(Status.OK);

    file(
        "proc/modules",
        "vmw_vsock_virtio_transport 20480 0 - Live 0x0\nvsock 49152 1 - Live 0x0\n");
    HealthCheck c = k.vsock();
    assertThat(c.status()).isEqualTo(Status.WARN);
    assertThat(c.detail()).contains("module vsock", "not namespaced");
    assertThat(c.fix()).contains("AF_UNIX, AF_INET and AF_INET6", "network.compat-sockets");

    Files.delete(root.resolve("proc/modules"));
    file("dev/vsock", "");
    assertThat(k.vsock().detail()).contains("/dev/vsock");
  }

  @Test
  void theProbeProgramIsAStaticI386ExecutableThatExitsThroughInt80() {
    ByteBuffer b = ByteBuffer.wrap(KernelSurface.i386Exit42()).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(b.getInt(0)).isEqualTo(0x464C457F); // \x7fELF
    assertThat(b.get(4)).isEqualTo((byte) 1); // ELFCLASS32
    assertThat(b.getShort(18)).isEqualTo((short) 3); // EM_386
    int entry = b.getInt(24);
    int vaddr = b.getInt(52 + 8);
    int fileSize = b.getInt(52 + 16);
    assertThat(fileSize).isEqualTo(b.capacity());
    int at = entry - vaddr;
    // mov eax, 1 (exit); mov ebx, 42; int 0x80
    assertThat(b.get(at)).isEqualTo((byte) 0xB8);
    assertThat(b.getInt(at + 1)).isEqualTo(1);
    assertThat(b.getInt(at + 6)).isEqualTo(42);
    assertThat(b.getShort(at + 10)).isEqualTo((short) 0x80CD);
  }

  @Test
  void theProbeProgramGetsADefiniteAnswerFromThisKernel() throws IOException {
    // Run for real: the kernel either serves the program (ON) or refuses it (OFF); both are
    // answers. UNKNOWN would mean the probe itself is broken here.
    Ia32Probe p = KernelSurface.runIa32Program();
    assertThat(p.state()).as(p.evidence()).isIn(Ia32.ON, Ia32.OFF);
  }
}
