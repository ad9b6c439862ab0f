package io.agentnest.microvm;

import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.microvm.internal.GuestImage;
import io.agentnest.microvm.internal.Guests;
import io.agentnest.microvm.internal.MicrovmDoctor;
import io.agentnest.microvm.internal.MicrovmSettings;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Sandboxes as virtual machines: each one is a QEMU {@code microvm} guest with its own kernel, so
 * code that breaks the guest kernel is still inside a hardware (KVM) or emulated (TCG) boundary.
 * Selected with {@code backend: microvm} or {@code runtime: microvm}; guest images come from {@code
 * agentnest image build --microvm}. Fork and snapshots carry the guest's memory (QEMU's migration
 * of the paused guest), or files and sessions where a sandbox has secret variables.
 */
public final class MicrovmBackend implements RuntimeBackend {
  public static final String NAME = "microvm";

  private volatile @Nullable Guests guests;

  /** ServiceLoader constructor; reads its settings on first use. */
  public MicrovmBackend() {}

  private Guests guests() {
    Guests g = guests;
    if (g == null) {
      synchronized (this) {
        g = guests;
        if (g == null) {
          g = new Guests(MicrovmSettings.fromEnvironment());
          guests = g;
        }
      }
    }
    return g;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public BackendSandbox create(SandboxSpec spec) {
    return guests().create(spec);
  }

  @Override
  public BackendSandbox attach(String id) {
    return guests().attach(id);
  }

  @Override
  public List<SandboxInfo> list() {
    return guests().list();
  }

  @Override
  public Optional<SandboxInfo> inspect(String id) {
    return guests().inspect(id);
  }

  @Override
  public void destroy(String id) {
    guests().destroy(id);
  }

  @Override
  public List<ManagedResource> resources() {
    return guests().resources();
  }

  @Override
  public void remove(ManagedResource resource) {
    if (resource.kind().equals("microvm")) {
      destroy(resource.id());
    }
  }

  /** Every guest: QEMU migrates a paused guest's memory and device state (docs/microvm.md). */
  @Override
  public boolean checkpointsMemory(SandboxConfig config) {
    return true;
  }

  /**
   * The guest pauses while its memory is migrated and continues on the same connection, so neither
   * callback runs (see {@link RuntimeBackend#forkWithCheckpoint}).
   */
  @Override
  public Optional<List<BackendSandbox>> forkWithCheckpoint(
      String id,
      SandboxSpec spec,
      int n,
      Runnable beforeCheckpoint,
      Consumer<BackendSandbox> parentRestored) {
    return guests().forkWithCheckpoint(id, spec, n);
  }

  /** The guest pauses and continues on the same connection: neither callback runs. */
  @Override
  public boolean checkpointTo(
      String id, Path dir, Runnable beforeCheckpoint, Consumer<BackendSandbox> restored) {
    return guests().checkpointTo(id, dir);
  }

  @Override
  public Optional<BackendSandbox> createFromCheckpoint(SandboxSpec spec, Path dir) {
    return Optional.of(guests().createFromCheckpoint(spec, dir));
  }

  @Override
  public Optional<String> imageId(String image) {
    return GuestImage.of(image).id();
  }

  @Override
  public List<HealthCheck> diagnose() {
    return MicrovmDoctor.run();
  }
}
