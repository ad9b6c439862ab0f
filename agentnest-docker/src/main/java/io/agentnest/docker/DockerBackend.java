package io.agentnest.docker;

import com.github.dockerjava.api.exception.NotFoundException;
import io.agentnest.ResourceUsage;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.docker.internal.DockerDoctor;
import io.agentnest.docker.internal.DockerEngine;
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
 * The default backend: containers on a Docker engine, with runc, runsc (gVisor) or any OCI runtime
 * registered in the daemon. Honours {@code DOCKER_HOST}; defaults to {@code
 * unix:///var/run/docker.sock}.
 */
public final class DockerBackend implements RuntimeBackend {
  private volatile @Nullable DockerEngine engine;

  /** ServiceLoader constructor; connects lazily. */
  public DockerBackend() {}

  private DockerEngine engine() {
    DockerEngine e = engine;
    if (e == null) {
      synchronized (this) {
        e = engine;
        if (e == null) {
          e = DockerEngine.connect();
          engine = e;
        }
      }
    }
    return e;
  }

  /** The engine, for diagnostics (doctor, image build). */
  public DockerEngine docker() {
    return engine();
  }

  @Override
  public String name() {
    return "docker";
  }

  @Override
  public BackendSandbox create(SandboxSpec spec) {
    return engine().create(spec);
  }

  @Override
  public BackendSandbox attach(String id) {
    return engine().attach(id);
  }

  @Override
  public List<SandboxInfo> list() {
    return engine().listManaged();
  }

  @Override
  public Optional<String> imageId(String image) {
    try {
      return Optional.ofNullable(engine().client().inspectImageCmd(image).exec().getId());
    } catch (NotFoundException e) {
      return Optional.empty();
    }
  }

  /**
   * gVisor runtimes ({@code gvisor}, {@code runsc} and names containing them) checkpoint memory;
   * runc cannot here (its CRIU fails on this kernel).
   */
  @Override
  public boolean checkpointsMemory(SandboxConfig config) {
    String runtime = config.runtime();
    return runtime != null && (runtime.contains("gvisor") || runtime.contains("runsc"));
  }

  @Override
  public Optional<List<BackendSandbox>> forkWithCheckpoint(
      String id,
      SandboxSpec spec,
      int n,
      Runnable beforeCheckpoint,
      Consumer<BackendSandbox> parentRestored) {
    return engine().forkWithCheckpoint(id, spec, n, beforeCheckpoint, parentRestored);
  }

  @Override
  public Optional<Path> bulkDirectory(String id) {
    return engine().bulkDirectory(id);
  }

  @Override
  public boolean checkpointTo(
      String id, Path dir, Runnable beforeCheckpoint, Consumer<BackendSandbox> restored) {
    return engine().checkpointTo(id, dir, beforeCheckpoint, restored);
  }

  @Override
  public Optional<BackendSandbox> createFromCheckpoint(SandboxSpec spec, Path dir) {
    return engine().createFromCheckpoint(spec, dir);
  }

  @Override
  public boolean canSetCpuShares(SandboxSpec spec) {
    return engine().canUpdateCpuShares(spec);
  }

  @Override
  public boolean setCpuShares(String id, int shares) {
    engine().updateCpuShares(id, shares);
    return true;
  }

  @Override
  public Optional<SandboxInfo> inspect(String id) {
    return engine().inspectManaged(id);
  }

  @Override
  public Optional<ResourceUsage> usage(String id) {
    return engine().usage(id);
  }

  @Override
  public void destroy(String id) {
    engine().remove(id);
  }

  @Override
  public List<ManagedResource> resources() {
    return engine().resources();
  }

  @Override
  public void remove(ManagedResource resource) {
    engine().removeResource(resource);
  }

  @Override
  public List<HealthCheck> diagnose() {
    return DockerDoctor.run();
  }
}
