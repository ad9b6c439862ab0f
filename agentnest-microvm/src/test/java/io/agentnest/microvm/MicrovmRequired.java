package io.agentnest.microvm;

import io.agentnest.microvm.internal.MicrovmSettings;
import io.agentnest.microvm.internal.QemuLauncher;
import io.agentnest.tck.Prerequisites;
import java.util.List;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Integration tests need QEMU and a guest image. The image is built here once per test home when
 * missing (offline from Debian packages, about a minute). Outside CI a missing QEMU skips with the
 * reason; under {@code CI=true} it fails, as every real-engine test does.
 */
public final class MicrovmRequired implements BeforeAllCallback {
  private static final Object BUILD = new Object();

  @Override
  public void beforeAll(ExtensionContext context) {
    String qemu = MicrovmSettings.fromEnvironment().qemu();
    if (QemuLauncher.find(qemu).isEmpty()) {
      Prerequisites.missing("QEMU", qemu + " is not installed: run scripts/setup-host.sh");
      return;
    }
    synchronized (BUILD) {
      if (!MicrovmImageBuilder.exists("agentnest/python:latest")) {
        MicrovmImageBuilder.build(
            "agentnest/python:latest",
            List.of(),
            "bookworm",
            s -> System.out.println("[image] " + s));
      }
    }
  }
}
