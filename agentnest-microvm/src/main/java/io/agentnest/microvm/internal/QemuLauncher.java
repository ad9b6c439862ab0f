package io.agentnest.microvm.internal;

import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Starts QEMU's {@code microvm} machine for a guest: no firmware tables beyond ACPI, no PCI, no
 * network device, virtio-mmio disks (the read-only root and the workspace) and one virtio-serial
 * port for the agent channel. QEMU runs daemonized, confined by its own seccomp filter ({@code
 * -sandbox on}) and, when started as root, as {@code nobody}: a guest that broke out of its VM
 * would hold an unprivileged process that cannot spawn programs.
 */
public final class QemuLauncher {
  /** Guest memory beyond the sandbox's limit: the guest kernel, the init and the page cache. */
  static final long OVERHEAD_MIB = 96;

  private QemuLauncher() {}

  /** The QEMU binary, from {@code AGENTNEST_QEMU} or the PATH. */
  public static Optional<Path> find(String qemu) {
    if (qemu.contains("/")) {
      Path p = Path.of(qemu);
      return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
    }
    String path = System.getenv("PATH");
    for (String dir : (path == null ? "/usr/bin:/bin" : path).split(File.pathSeparator)) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, qemu);
      if (Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  public static Path require(String qemu) {
    return find(qemu)
        .orElseThrow(
            () ->
                new BackendUnavailableException(
                    "QEMU ("
                        + qemu
                        + ") is not installed: 'apt-get install qemu-system-x86'"
                        + " (scripts/setup-host.sh does it), or set "
                        + MicrovmSettings.QEMU_ENV
                        + " to its path"));
  }

  /** The first line of {@code qemu --version}, or empty when it does not run. */
  public static Optional<String> version(Path qemu) {
    try {
      Process p =
          new ProcessBuilder(qemu.toString(), "--version").redirectErrorStream(true).start();
      byte[] out = p.getInputStream().readNBytes(4096);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return Optional.empty();
      }
      String first = new String(out, StandardCharsets.UTF_8).lines().findFirst().orElse("");
      return first.isEmpty() ? Optional.empty() : Optional.of(first);
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  /** What a guest is started with. */
  public record Machine(String accel, long memoryMiB, int vcpus, String appendExtra) {}

  /** QEMU's arguments for a guest of {@code image} whose state lives in {@code vm}. */
  public static List<String> command(Path qemu, GuestImage image, VmDirectory vm, Machine m) {
    return command(qemu, image, vm, m, kernelArguments(m), false);
  }

  /**
   * QEMU's arguments for a guest; {@code incoming}: it waits for a migration stream on {@link
   * VmDirectory#incomingSocket()} instead of booting (a restore, with the kernel arguments the
   * checkpointed guest had: the machine must be the same). That socket is made before QEMU drops to
   * nobody, in the owner-only guest directory.
   */
  public static List<String> command(
      Path qemu, GuestImage image, VmDirectory vm, Machine m, String kernelArgs, boolean incoming) {
    List<String> c = new ArrayList<>();
    c.add(qemu.toString());
    c.addAll(List.of("-name", "agentnest-" + vm.id().substring(0, 12)));
    c.addAll(List.of("-machine", "microvm,rtc=on,acpi=on,pit=on,pic=on,isa-serial=on"));
    if (m.accel().equals("kvm")) {
      c.addAll(List.of("-accel", "kvm", "-cpu", "host"));
    } else {
      c.addAll(List.of("-accel", "tcg", "-cpu", "max"));
    }
    c.addAll(List.of("-m", m.memoryMiB() + "M", "-smp", Integer.toString(m.vcpus())));
    c.addAll(List.of("-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"));
    // The console goes to a ring buffer in QEMU's memory, read over the monitor for diagnostics.
    c.addAll(List.of("-chardev", "ringbuf,id=console,size=65536", "-serial", "chardev:console"));
    c.addAll(List.of("-kernel", image.kernel().toString(), "-initrd", image.initrd().toString()));
    c.addAll(List.of("-append", kernelArgs));
    c.addAll(
        List.of(
            "-drive",
            "id=root,file=" + image.rootfs() + ",format=raw,readonly=on,if=none",
            "-device",
            "virtio-blk-device,drive=root"));
    if (Files.exists(vm.workspaceDisk())) {
      c.addAll(
          List.of(
              "-drive",
              // Relative to QEMU's working directory: nobody cannot pass the guest directory.
              "id=ws,file=" + VmDirectory.WORKSPACE_DISK + ",format=raw,if=none,discard=unmap",
              "-device",
              "virtio-blk-device,drive=ws"));
    }
    c.addAll(
        List.of(
            "-device",
            "virtio-serial-device,max_ports=3",
            "-chardev",
            "socket,id=agent,path=" + vm.agentSocket() + ",server=on,wait=off",
            "-device",
            "virtserialport,chardev=agent,name=agentnest",
            // The host's control line to the guest init (after a restore: the time, a seed).
            "-chardev",
            "socket,id=ctl,path=" + vm.controlSocket() + ",server=on,wait=off",
            "-device",
            "virtserialport,chardev=ctl,name=agentnest-ctl"));
    c.addAll(List.of("-qmp", "unix:" + vm.qmpSocket() + ",server=on,wait=off"));
    // Started as root, QEMU drops to nobody once its files are open; its seccomp filter must then
    // let that one set*id call through (nobody cannot regain anything with it). Otherwise it may
    // never change ids.
    boolean root = runsAsNobody();
    c.addAll(
        List.of(
            "-sandbox",
            "on,obsolete=deny,spawn=deny,resourcecontrol=deny,elevateprivileges="
                + (root ? "allow" : "deny")));
    if (root) {
      c.addAll(List.of("-runas", "nobody"));
    }
    c.addAll(List.of("-pidfile", vm.pidFile().toString()));
    if (incoming) {
      c.addAll(List.of("-incoming", "unix:" + vm.incomingSocket()));
    }
    // Its own session: a Ctrl-C meant for the process that made the guest must not reach it (the
    // guest outlives that process, as a container outlives its client). Not -daemonize: QEMU's
    // seccomp filter with spawn=deny forbids the fork that would need.
    Path setsid = Path.of("/usr/bin/setsid");
    if (Files.isExecutable(setsid)) {
      c.add(0, setsid.toString());
    }
    return c;
  }

  /** Started by root, QEMU drops to nobody once its files are open. */
  static boolean runsAsNobody() {
    return "root".equals(System.getProperty("user.name"));
  }

  /**
   * The guest kernel's command line. Under TCG the guest's TSC runs at the host's rate, but the
   * kernel cannot measure it against the emulated PIT on a busy host and then hangs in its timer
   * set-up; so it is told the rate. Speculation mitigations cost much under emulation and guard
   * against nothing there (TCG does not speculate).
   */
  static String kernelArguments(Machine m) {
    StringBuilder a =
        new StringBuilder("console=ttyS0 quiet panic=-1 reboot=t random.trust_cpu=on");
    if (!m.accel().equals("kvm")) {
      a.append(" mitigations=off tsc_early_khz=").append(hostTscKhz());
    }
    if (!m.appendExtra().isBlank()) {
      a.append(' ').append(m.appendExtra().strip());
    }
    return a.toString();
  }

  /** The host CPU's clock in kHz from /proc/cpuinfo (the TSC rate on current x86), or 2 GHz. */
  static long hostTscKhz() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"), StandardCharsets.US_ASCII)) {
        if (line.startsWith("cpu MHz")) {
          double mhz = Double.parseDouble(line.substring(line.indexOf(':') + 1).strip());
          if (mhz > 100 && mhz < 100_000) {
            return Math.round(mhz * 1000);
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      // fall through to the default
    }
    return 2_000_000;
  }

  /**
   * Starts QEMU and waits until it listens on the guest's agent socket (the guest then boots on its
   * own); throws with QEMU's own words when it refuses to start.
   */
  public static void start(List<String> command, VmDirectory vm) {
    Process p;
    try {
      ProcessBuilder pb = new ProcessBuilder(command);
      if (Files.isDirectory(vm.migrationDir())) {
        pb.directory(vm.migrationDir().toFile());
      }
      p =
          pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
              .redirectErrorStream(true)
              .redirectOutput(vm.errorFile().toFile())
              .start();
    } catch (IOException e) {
      throw new BackendUnavailableException(
          "cannot run " + command.get(0) + ": " + e.getMessage(), e);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    try {
      while (System.nanoTime() < deadline) {
        if (!p.isAlive()) {
          throw new AgentNestException(
              "QEMU refused to start the guest (exit " + p.exitValue() + "): " + vm.errors());
        }
        if (Files.exists(vm.agentSocket())
            && Files.exists(vm.qmpSocket())
            && vm.pid().isPresent()) {
          return;
        }
        Thread.sleep(5);
      }
      p.destroyForcibly();
      throw new AgentNestException("QEMU did not start the guest within 60 s: " + vm.errors());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new AgentNestException("interrupted while starting QEMU", e);
    }
  }
}
