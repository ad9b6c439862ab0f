package io.agentnest.microvm.internal;

import io.agentnest.ConfigException;
import io.agentnest.spi.HealthCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** {@code agentnest doctor}'s checks of the microVM backend's host; never throws. */
public final class MicrovmDoctor {
  private MicrovmDoctor() {}

  public static List<HealthCheck> run() {
    List<HealthCheck> out = new ArrayList<>();
    MicrovmSettings settings;
    try {
      settings = MicrovmSettings.fromEnvironment();
    } catch (ConfigException e) {
      out.add(
          HealthCheck.fail("microvm settings", String.valueOf(e.getMessage()), "fix the variable"));
      return out;
    }
    Optional<Path> qemu = QemuLauncher.find(settings.qemu());
    if (qemu.isEmpty()) {
      out.add(
          HealthCheck.warn(
              "microvm qemu",
              settings.qemu() + " not found",
              "apt-get install qemu-system-x86 (scripts/setup-host.sh does it) to use the microvm"
                  + " backend"));
    } else {
      out.add(
          HealthCheck.ok(
              "microvm qemu",
              qemu.get() + ": " + QemuLauncher.version(qemu.get()).orElse("version unknown")));
    }
    Path kvm = Path.of("/dev/kvm");
    if (!Files.exists(kvm)) {
      out.add(
          HealthCheck.warn(
              "microvm kvm",
              "/dev/kvm is missing: guests run under TCG (emulation, about 10-50x slower)",
              "run on a host with hardware virtualisation (nested virtualisation on a cloud VM)"));
    } else if (!Accelerator.kvmAccessible()) {
      out.add(
          HealthCheck.warn(
              "microvm kvm",
              "/dev/kvm exists but this user cannot open it",
              "add the user to the 'kvm' group"));
    } else {
      out.add(HealthCheck.ok("microvm kvm", "/dev/kvm is accessible"));
    }
    GuestImage image = GuestImage.of("agentnest/python:latest");
    if (!image.exists()) {
      out.add(
          HealthCheck.warn(
              "microvm image",
              "agentnest/python:latest is not built for microVMs (" + image.dir() + ")",
              "agentnest image build --microvm"));
    } else {
      out.add(HealthCheck.ok("microvm image", "agentnest/python:latest in " + image.dir()));
      qemu.ifPresent(
          q -> {
            Accelerator.Choice c = Accelerator.resolve(settings, q, image);
            out.add(
                c.accel().equals("kvm")
                    ? HealthCheck.ok("microvm accelerator", "kvm: " + c.reason())
                    : HealthCheck.warn(
                        "microvm accelerator",
                        "tcg: " + c.reason(),
                        "guests work but boot in seconds; use a host where KVM guests run for"
                            + " sub-second starts"));
          });
    }
    return out;
  }
}
