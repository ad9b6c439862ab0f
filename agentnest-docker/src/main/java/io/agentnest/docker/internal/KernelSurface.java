package io.agentnest.docker.internal;

import io.agentnest.spi.HealthCheck;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

/**
 * Kernel interfaces on the host that reach past a container's namespaces, for {@code agentnest
 * doctor}: the 32-bit system call ABI (IA32 emulation) and vsock. Neither can be switched off from
 * a container; the doctor says whether they are there and what AgentNest does about them.
 */
public final class KernelSurface {
  /** What the host says about its IA32 emulation. */
  public enum Ia32 {
    /** A 32-bit program ran and its int 0x80 system call was served. */
    ON,
    /** The kernel refused to run a 32-bit program: no i386 ABI (int 0x80 has no handler either). */
    OFF,
    /** The probe could not run here; the answer comes from the kernel's configuration. */
    UNKNOWN
  }

  /** The outcome of running the 32-bit probe program. */
  public record Ia32Probe(Ia32 state, String evidence) {}

  /** Runs the probe program; a seam for tests. */
  @FunctionalInterface
  public interface Ia32Runner {
    Ia32Probe run();
  }

  private static final int PROBE_EXIT = 42;
  // What /bin/sh exits with when asked to run an ELF file as a script: not found, not
  // executable, syntax error.
  private static final Set<Integer> SHELL_FALLBACK_EXITS = Set.of(2, 126, 127);

  private final Path root;
  private final Ia32Runner runner;

  /** The real host: its /proc, /sys, /dev and /boot, and a real 32-bit probe. */
  public KernelSurface() {
    this(Path.of("/"), KernelSurface::runIa32Program);
  }

  KernelSurface(Path root, Ia32Runner runner) {
    this.root = root;
    this.runner = runner;
  }

  public List<HealthCheck> checks() {
    return List.of(ia32(), vsock());
  }

  HealthCheck ia32() {
    String name = "kernel: IA32 emulation";
    String fix =
        "nothing to do for AgentNest: its seccomp profile lists only the native ABI, so a"
            + " sandbox's 32-bit (int 0x80) or x32 system call kills the calling thread, and the"
            + " escape suite attacks that path (kernel.compat-syscalls, network.compat-sockets) on"
            + " every run; to remove it from the host altogether, boot with ia32_emulation=0"
            + " (kernel 6.7+) or a kernel without CONFIG_IA32_EMULATION";
    if (!Files.isDirectory(root.resolve("proc/sys"))) {
      return HealthCheck.ok(name, "not a Linux host");
    }
    Ia32Probe probe = runner.run();
    return switch (probe.state()) {
      case ON ->
          HealthCheck.warn(
              name,
              "on: 32-bit system calls reach this kernel from any process ("
                  + probe.evidence()
                  + ")",
              fix);
      case OFF -> HealthCheck.ok(name, "off: " + probe.evidence());
      case UNKNOWN -> {
        String config = configEvidence();
        yield config.startsWith("off")
            ? HealthCheck.ok(name, config + " (" + probe.evidence() + ")")
            : HealthCheck.warn(name, config + " (" + probe.evidence() + ")", fix);
      }
    };
  }

  /**
   * What the kernel's configuration and command line say. Only a hint: a kernel can have the ABI
   * built in and still refuse it at run time (ia32_emulation=0, or a hypervisor that disables it,
   * as on the VM this project is built on), which is why the probe program comes first.
   */
  String configEvidence() {
    String cmdline = read("proc/cmdline").toLowerCase(Locale.ROOT);
    for (String word : cmdline.split("\\s+")) {
      if (word.startsWith("ia32_emulation=")) {
        String v = word.substring("ia32_emulation=".length());
        boolean on = v.equals("1") || v.equals("y") || v.equals("on") || v.equals("true");
        return (on ? "probably on" : "off") + ": the kernel command line says " + word;
      }
    }
    String config = kernelConfig();
    if (config.contains("\nCONFIG_IA32_EMULATION=y")) {
      return config.contains("\nCONFIG_IA32_EMULATION_DEFAULT_DISABLED=y")
          ? "off: built in but disabled by default (CONFIG_IA32_EMULATION_DEFAULT_DISABLED)"
          : "probably on: the kernel is built with CONFIG_IA32_EMULATION";
    }
    if (config.contains("\n# CONFIG_IA32_EMULATION is not set")) {
      return "off: the kernel is built without CONFIG_IA32_EMULATION";
    }
    return Files.exists(root.resolve("proc/sys/abi/vsyscall32"))
        ? "probably on: /proc/sys/abi/vsyscall32 exists (the kernel has the 32-bit ABI built in)"
        : "unknown: no kernel configuration to read";
  }

  HealthCheck vsock() {
    String name = "kernel: vsock";
    List<String> found = new ArrayList<>();
    for (String p : List.of("dev/vsock", "sys/class/misc/vsock", "sys/module/vsock")) {
      if (Files.exists(root.resolve(p))) {
        found.add("/" + p);
      }
    }
    for (String line : read("proc/modules").split("\n")) {
      String mod = line.split(" ", 2)[0];
      if (mod.equals("vsock") || mod.contains("_vsock")) {
        found.add("module " + mod);
      }
    }
    if (found.isEmpty()) {
      return HealthCheck.ok(name, "absent");
    }
    return HealthCheck.warn(
        name,
        "present ("
            + String.join(", ", found)
            + "): AF_VSOCK is not namespaced, a process that can open such a socket reaches the"
            + " hypervisor or the host whatever its network namespace",
        "AgentNest's seccomp profile allows sockets only for AF_UNIX, AF_INET and AF_INET6 and"
            + " only through the native ABI (no socketcall, no 32-bit calls), no vsock device is"
            + " mapped into sandboxes, and gVisor has no AF_VSOCK; the escape suite checks every"
            + " path (network.packet-sockets, network.compat-sockets, devices.host-devices). If"
            + " nothing on this host needs vsock, unload it: modprobe -r"
            + " vmw_vsock_virtio_transport vsock (not possible where it is built in)");
  }

  private String kernelConfig() {
    Path gz = root.resolve("proc/config.gz");
    if (Files.isReadable(gz)) {
      try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
        return "\n" + new String(in.readNBytes(4 << 20), StandardCharsets.UTF_8);
      } catch (IOException e) {
        // fall through to /boot
      }
    }
    String release = read("proc/sys/kernel/osrelease").strip();
    return release.isEmpty() ? "" : "\n" + read("boot/config-" + release);
  }

  private String read(String relative) {
    Path p = root.resolve(relative);
    try (InputStream in = Files.newInputStream(p)) {
      return new String(in.readNBytes(4 << 20), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  /**
   * Runs a 96-byte static i386 program that calls exit(42) with int 0x80. The JVM cannot make a
   * 32-bit system call itself; a kernel that runs this program serves the i386 ABI to every
   * process, and one that refuses it (ENOEXEC) has no int 0x80 handler either (kernels 6.7+ switch
   * both off together; older ones have both or neither).
   */
  static Ia32Probe runIa32Program() {
    if (!System.getProperty("os.arch", "").equals("amd64")) {
      return new Ia32Probe(Ia32.OFF, "not an x86_64 host");
    }
    Path dir = null;
    try {
      dir = Files.createTempDirectory("agentnest-ia32-");
      Path bin = dir.resolve("exit42");
      Files.write(bin, i386Exit42());
      Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwx------"));
      Process p;
      try {
        p = new ProcessBuilder(bin.toString()).redirectErrorStream(true).start();
      } catch (IOException e) {
        String msg = String.valueOf(e.getMessage());
        if (msg.contains("error=8,") || msg.contains("Exec format error")) {
          return new Ia32Probe(
              Ia32.OFF, "the kernel refused to run a 32-bit program (Exec format error)");
        }
        return new Ia32Probe(Ia32.UNKNOWN, "could not run the 32-bit probe: " + msg);
      }
      p.getInputStream().readNBytes(4096);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return new Ia32Probe(Ia32.UNKNOWN, "the 32-bit probe did not finish");
      }
      int code = p.exitValue();
      if (code == PROBE_EXIT) {
        return new Ia32Probe(Ia32.ON, "a 32-bit program's int 0x80 exit(42) was served");
      }
      if (SHELL_FALLBACK_EXITS.contains(code)) {
        // The JVM runs a program the kernel refuses with ENOEXEC as a shell script instead;
        // the shell cannot make sense of an ELF file and fails with one of these.
        return new Ia32Probe(
            Ia32.OFF, "the kernel refused to run a 32-bit program (Exec format error)");
      }
      return new Ia32Probe(
          Ia32.UNKNOWN, "the 32-bit probe ran but its system call failed (exit " + code + ")");
    } catch (IOException e) {
      return new Ia32Probe(Ia32.UNKNOWN, "could not write the 32-bit probe: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Ia32Probe(Ia32.UNKNOWN, "interrupted");
    } finally {
      if (dir != null) {
        try {
          Files.deleteIfExists(dir.resolve("exit42"));
          Files.deleteIfExists(dir);
        } catch (IOException ignored) {
          // a 96-byte file in the temp directory
        }
      }
    }
  }

  /** ELF32 header, one PT_LOAD program header, then: mov eax,1; mov ebx,42; int 0x80. */
  static byte[] i386Exit42() {
    byte[] code = {
      (byte) 0xB8, 1, 0, 0, 0, (byte) 0xBB, PROBE_EXIT, 0, 0, 0, (byte) 0xCD, (byte) 0x80
    };
    int base = 0x08048000;
    int ehdr = 52;
    int phdr = 32;
    int total = ehdr + phdr + code.length;
    ByteBuffer b = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
    b.put(new byte[] {0x7F, 'E', 'L', 'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    b.putShort((short) 2).putShort((short) 3).putInt(1); // ET_EXEC, EM_386, EV_CURRENT
    b.putInt(base + ehdr + phdr).putInt(ehdr).putInt(0).putInt(0); // entry, phoff, shoff, flags
    b.putShort((short) ehdr).putShort((short) phdr).putShort((short) 1); // ehsize, phentsize, n
    b.putShort((short) 0).putShort((short) 0).putShort((short) 0); // no section headers
    b.putInt(1).putInt(0).putInt(base).putInt(base); // PT_LOAD, offset, vaddr, paddr
    b.putInt(total).putInt(total).putInt(5).putInt(0x1000); // filesz, memsz, R+X, align
    b.put(code);
    return b.array();
  }
}
