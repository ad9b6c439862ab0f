package io.agentnest.microvm.internal;

import io.agentnest.ConfigException;
import java.time.Duration;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The backend's host settings, from system properties or the environment: the accelerator ({@code
 * AGENTNEST_MICROVM_ACCEL}: auto, kvm or tcg), the boot timeout ({@code
 * AGENTNEST_MICROVM_BOOT_TIMEOUT}, seconds) and the QEMU binary ({@code AGENTNEST_QEMU}).
 */
public record MicrovmSettings(String accel, @Nullable Duration bootTimeout, String qemu) {
  public static final String ACCEL_ENV = "AGENTNEST_MICROVM_ACCEL";
  public static final String BOOT_TIMEOUT_ENV = "AGENTNEST_MICROVM_BOOT_TIMEOUT";
  public static final String QEMU_ENV = "AGENTNEST_QEMU";

  public static MicrovmSettings fromEnvironment() {
    String accel = value("agentnest.microvm.accel", ACCEL_ENV, "auto").toLowerCase(Locale.ROOT);
    if (!accel.matches("auto|kvm|tcg")) {
      throw new ConfigException(
          ACCEL_ENV + "='" + accel + "' is not an accelerator: use auto (the default), kvm or tcg");
    }
    String timeout = value("agentnest.microvm.bootTimeout", BOOT_TIMEOUT_ENV, "");
    Duration boot = null;
    if (!timeout.isEmpty()) {
      if (!timeout.matches("[0-9]{1,4}") || Integer.parseInt(timeout) == 0) {
        throw new ConfigException(
            BOOT_TIMEOUT_ENV + "='" + timeout + "' is not a number of seconds: e.g. 60");
      }
      boot = Duration.ofSeconds(Integer.parseInt(timeout));
    }
    return new MicrovmSettings(
        accel, boot, value("agentnest.qemu", QEMU_ENV, "qemu-system-x86_64"));
  }

  /** How long a guest may take to come up: generous under TCG, where everything is emulated. */
  public Duration bootTimeout(String resolvedAccel) {
    if (bootTimeout != null) {
      return bootTimeout;
    }
    return resolvedAccel.equals("kvm") ? Duration.ofSeconds(15) : Duration.ofSeconds(90);
  }

  private static String value(String property, String env, String fallback) {
    String p = System.getProperty(property);
    if (p != null && !p.isBlank()) {
      return p.strip();
    }
    String e = System.getenv(env);
    return e != null && !e.isBlank() ? e.strip() : fallback;
  }
}
