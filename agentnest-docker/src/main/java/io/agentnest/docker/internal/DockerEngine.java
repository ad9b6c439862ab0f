package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import io.agentnest.AgentNestException;
import io.agentnest.ResourceUsage;
import io.agentnest.SandboxInfo;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.SandboxSpec;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * docker-java behind the backend: every Docker type stays in this package. A facade of delegations
 * (like docker-java's DockerClientImpl): containers and their spec, images, runtimes, bulk
 * directories, managed resources and gVisor checkpoints each live in a small class of their own.
 */
public final class DockerEngine {
  /** Printed wherever the engine is missing. */
  public static final String START_HINT =
      "start it with 'scripts/setup-host.sh' (installs and starts dockerd on Debian) or"
          + " 'dockerd &', then check with 'agentnest doctor'";

  /** The kind of a {@link ManagedResource} that is an orphaned bulk directory. */
  public static final String BULK_DIR_KIND = BulkDirs.KIND;

  private final DockerClient client;
  private final URI host;
  private final EngineErrors errors;
  private final DockerImages images;
  private final DockerRuntimes runtimes;
  private final DockerContainers containers;
  private final DockerResources resources;
  private final DockerCheckpoints checkpoints;
  private final DockerStats stats;

  private DockerEngine(DockerClient client, URI host) {
    this.client = client;
    this.host = host;
    this.errors = new EngineErrors(host);
    EngineHttp http = new EngineHttp(host, errors);
    this.images = new DockerImages(client, errors, http);
    this.runtimes = new DockerRuntimes(client, errors);
    this.containers =
        new DockerContainers(client, host, errors, images, runtimes, new BulkDirs(host));
    this.resources = new DockerResources(client, errors, containers);
    this.checkpoints = new DockerCheckpoints(client, runtimes, containers, http);
    this.stats = new DockerStats(client);
  }

  public static DockerEngine connect() {
    DockerClientConfig cfg = DefaultDockerClientConfig.createDefaultConfigBuilder().build();
    URI host = cfg.getDockerHost();
    DockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(host)
            .sslConfig(cfg.getSSLConfig())
            .maxConnections(64)
            .connectionTimeout(Duration.ofSeconds(5))
            .responseTimeout(Duration.ofMinutes(5))
            .build();
    DockerClient client = DockerClientImpl.getInstance(cfg, http);
    DockerEngine engine = new DockerEngine(client, host);
    engine.ping();
    return engine;
  }

  public URI host() {
    return host;
  }

  public DockerClient client() {
    return client;
  }

  void ping() {
    try {
      client.pingCmd().exec();
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }

  /** Runtimes registered in the daemon (runc, runsc, ...). */
  public Map<String, Object> runtimes() {
    return runtimes.registered();
  }

  public Info info() {
    return runtimes.info();
  }

  public boolean imageExists(String image) {
    return images.exists(image);
  }

  /**
   * Imports a root filesystem tar as an image ({@code docker import}), with Dockerfile-style {@code
   * changes} such as {@code ENV LANG=C.UTF-8}. Returns the engine's last status line.
   */
  public String importImage(InputStream tar, String repo, String tag, List<String> changes) {
    return images.importImage(tar, repo, tag, changes);
  }

  public BackendSandbox create(SandboxSpec spec) {
    return containers.create(spec);
  }

  public BackendSandbox attach(String idOrPrefix) {
    return containers.attach(idOrPrefix);
  }

  public List<SandboxInfo> listManaged() {
    return containers.listManaged();
  }

  public Optional<SandboxInfo> inspectManaged(String idOrPrefix) {
    return containers.inspectManaged(idOrPrefix);
  }

  /**
   * The bulk directory of a managed sandbox, checked to be one this engine makes and closed to all
   * but the sandbox's own group.
   */
  public Optional<Path> bulkDirectory(String id) {
    return containers.bulkDirectory(id);
  }

  /** CPU and memory the container uses now (one engine sample, about a second). */
  public Optional<ResourceUsage> usage(String id) {
    return stats.usage(id);
  }

  /**
   * Whether a container of {@code spec} could have its CPU weight changed while it runs: runc can
   * ({@code docker update}); runsc has no update command, so a gVisor sandbox keeps its weight.
   */
  public boolean canUpdateCpuShares(SandboxSpec spec) {
    String runtime = runtimes.resolve(spec.runtime());
    return "runc".equals(runtime == null ? runtimes.defaultRuntime() : runtime);
  }

  /** {@code docker update --cpu-shares}: the container's relative CPU weight. */
  public void updateCpuShares(String id, int shares) {
    try {
      client.updateContainerCmd(id).withCpuShares(shares).exec();
    } catch (DockerException e) {
      throw new AgentNestException(
          "cannot set the CPU weight of sandbox " + id + ": " + e.getMessage(), e);
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }

  /** Force-removes a container; a no-op when it is already gone. */
  public void remove(String id) {
    containers.remove(id);
  }

  /** Every container, network and volume labelled as managed by AgentNest. */
  public List<ManagedResource> resources() {
    return resources.list();
  }

  public void removeResource(ManagedResource r) {
    resources.remove(r);
  }

  /**
   * Fork with process memory (gVisor): see {@link DockerCheckpoints}. Empty, with nothing done,
   * where the engine's root directory is not on this host (a local daemon run as root).
   */
  public Optional<List<BackendSandbox>> forkWithCheckpoint(
      String parentId,
      SandboxSpec spec,
      int n,
      Runnable beforeCheckpoint,
      Consumer<BackendSandbox> parentRestored) {
    return checkpoints.fork(parentId, spec, n, beforeCheckpoint, parentRestored);
  }

  /**
   * Checkpoints sandbox {@code id} (gVisor), restores it in place at once and moves the checkpoint
   * image's files to {@code dir}. False, with nothing done, when that is not possible here.
   */
  public boolean checkpointTo(
      String id, Path dir, Runnable beforeCheckpoint, Consumer<BackendSandbox> restored) {
    return checkpoints.checkpointTo(id, dir, beforeCheckpoint, restored);
  }

  /**
   * Creates a container from {@code spec} and starts it from the checkpoint image in {@code dir}.
   * Empty, with nothing done, when the spec's runtime is not runsc or that is not possible here.
   */
  public Optional<BackendSandbox> createFromCheckpoint(SandboxSpec spec, Path dir) {
    return checkpoints.createFrom(spec, dir);
  }
}
