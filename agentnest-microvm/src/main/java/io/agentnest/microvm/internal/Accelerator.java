package io.agentnest.microvm.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Which accelerator guests run on. {@code kvm} and {@code tcg} are taken as given; {@code auto}
 * uses KVM only where a KVM guest was seen to boot on this host: {@code /dev/kvm} can exist where
 * guests hang (a VM whose hypervisor does not pass virtualisation through) or QEMU aborts on the
 * host CPU model. The probe boots the image's kernel to its initramfs and back off, once per host
 * boot and QEMU/kernel pair; its answer is kept in {@code AGENTNEST_HOME/microvm/accel.json}.
 */
public final class Accelerator {
  /** A KVM guest powers off from its initramfs in well under a second; TCG in about 3 s. */
  private static final long PROBE_TIMEOUT_S = 8;

  private static final ObjectMapper JSON = new ObjectMapper();

  private Accelerator() {}

  /** Result of a decision, with the reason shown by {@code doctor}. */
  public record Choice(String accel, String reason) {}

  /** Whether this process may open {@code /dev/kvm} for reading and writing. */
  public static boolean kvmAccessible() {
    Path kvm = Path.of("/dev/kvm");
    return Files.exists(kvm) && Files.isReadable(kvm) && Files.isWritable(kvm);
  }

  public static Choice resolve(MicrovmSettings settings, Path qemu, GuestImage image) {
    if (!settings.accel().equals("auto")) {
      return new Choice(settings.accel(), "set by " + MicrovmSettings.ACCEL_ENV);
    }
    if (!kvmAccessible()) {
      return new Choice("tcg", "/dev/kvm is missing or not accessible to this user");
    }
    String key = cacheKey(qemu, image);
    Path cache = GuestImage.root().resolveSibling("accel.json");
    try {
      @SuppressWarnings("unchecked")
      Map<String, String> cached = JSON.readValue(cache.toFile(), Map.class);
      String accel = cached.get("accel");
      String reason = cached.get("reason");
      if (key.equals(cached.get("key")) && accel != null && reason != null) {
        return new Choice(accel, reason);
      }
    } catch (IOException | RuntimeException e) {
      // no answer kept yet
    }
    Choice c = probe(qemu, image);
    try {
      Path tmp = cache.resolveSibling("accel.json.tmp");
      Files.write(
          tmp,
          JSON.writeValueAsBytes(Map.of("key", key, "accel", c.accel(), "reason", c.reason())));
      Files.move(tmp, cache, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      // probed again next time
    }
    return c;
  }

  /** What the kept answer is valid for: this host boot, this QEMU, this kernel. */
  private static String cacheKey(Path qemu, GuestImage image) {
    String boot;
    try {
      boot =
          Files.readString(Path.of("/proc/sys/kernel/random/boot_id"), StandardCharsets.US_ASCII)
              .strip();
    } catch (IOException e) {
      boot = "unknown";
    }
    long qemuTime = qemu.toFile().lastModified();
    long kernelTime = image.kernel().toFile().lastModified();
    return boot + "/" + qemu + "@" + qemuTime + "/" + image.kernel() + "@" + kernelTime;
  }

  private static Choice probe(Path qemu, GuestImage image) {
    List<String> cmd =
        List.of(
            qemu.toString(),
            "-machine",
            "microvm,rtc=on,acpi=on",
            "-accel",
            "kvm",
            "-cpu",
            "host",
            "-m",
            "128M",
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
            "-kernel",
            image.kernel().toString(),
            "-initrd",
            image.initrd().toString(),
            "-append",
            "console=ttyS0 quiet panic=-1 reboot=t agentnest.probe");
    long started = System.nanoTime();
    try {
      Process p =
          new ProcessBuilder(cmd)
              .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!p.waitFor(PROBE_TIMEOUT_S, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(5, TimeUnit.SECONDS);
        return new Choice(
            "tcg",
            "a KVM guest did not boot within "
                + PROBE_TIMEOUT_S
                + " s on this host (nested virtualisation not passed through?)");
      }
      long ms = (System.nanoTime() - started) / 1_000_000;
      if (p.exitValue() != 0) {
        return new Choice("tcg", "QEMU with KVM exited with " + p.exitValue() + " on this host");
      }
      return new Choice("kvm", "a KVM guest booted and powered off in " + ms + " ms");
    } catch (IOException e) {
      return new Choice("tcg", "cannot run the KVM probe: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Choice("tcg", "interrupted while probing KVM");
    }
  }
}
