package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.LogConfig;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.SandboxSpec;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/** docker-java behind the backend: every Docker type stays in this package. */
public final class DockerEngine {
  /** Printed wherever the engine is missing. */
  public static final String START_HINT =
      "start it with 'scripts/setup-host.sh' (installs and starts dockerd on Debian) or"
          + " 'dockerd &', then check with 'agentnest doctor'";

  private final DockerClient client;
  private final URI host;
  private final Set<String> knownImages = ConcurrentHashMap.newKeySet();
  private volatile @Nullable Map<String, Object> runtimes;

  private DockerEngine(DockerClient client, URI host) {
    this.client = client;
    this.host = host;
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
      throw unavailable(e);
    }
  }

  BackendUnavailableException unavailable(RuntimeException e) {
    return new BackendUnavailableException(
        "cannot reach the Docker engine at "
            + host
            + " ("
            + rootMessage(e)
            + "): "
            + START_HINT
            + "; set DOCKER_HOST if it listens elsewhere",
        e);
  }

  static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String m = t.getMessage();
    return t.getClass().getSimpleName() + (m == null ? "" : ": " + m.strip());
  }

  /** Runtimes registered in the daemon (runc, runsc, ...). */
  public Map<String, Object> runtimes() {
    Map<String, Object> r = runtimes;
    if (r == null) {
      Info info = info();
      Map<String, Object> found = new LinkedHashMap<>();
      if (info.getRuntimes() != null) {
        found.putAll(info.getRuntimes());
      }
      r = found;
      runtimes = r;
    }
    return r;
  }

  public Info info() {
    try {
      return client.infoCmd().exec();
    } catch (DockerException e) {
      throw new AgentNestException("Docker 'info' failed: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
  }

  public boolean imageExists(String image) {
    if (knownImages.contains(image)) {
      return true;
    }
    try {
      client.inspectImageCmd(image).exec();
      knownImages.add(image);
      return true;
    } catch (NotFoundException e) {
      return false;
    } catch (DockerException e) {
      throw new AgentNestException(
          "Docker could not inspect image " + image + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
  }

  /** Maps the runtime alias to the daemon's name and refuses one the daemon does not know. */
  @Nullable String resolveRuntime(@Nullable String requested) {
    if (requested == null || requested.isBlank()) {
      return null;
    }
    String name = requested.equals("gvisor") ? "runsc" : requested;
    if (name.equals("kata")) {
      name = runtimes().containsKey("kata") ? "kata" : "kata-runtime";
    }
    if (!runtimes().containsKey(name)) {
      throw new UnsupportedControlException(
          "runtime '"
              + requested
              + "' is not registered in the Docker daemon (it has "
              + runtimes().keySet()
              + "): install it and add it to /etc/docker/daemon.json, e.g. "
              + "{\"runtimes\":{\"runsc\":{\"path\":\"/usr/bin/runsc\",\"runtimeArgs\":"
              + "[\"--network=none\"]}}}, then restart dockerd; 'agentnest doctor' checks it");
    }
    return name;
  }

  public BackendSandbox create(SandboxSpec spec) {
    String id = createContainer(spec);
    BackendSandbox att = null;
    try {
      att = openAttachment(id);
      client.startContainerCmd(id).exec();
      return att;
    } catch (RuntimeException e) {
      if (att != null) {
        att.close();
      }
      remove(id);
      String msg = e.getMessage() == null ? e.toString() : e.getMessage();
      if (msg.contains("executable file not found") || msg.contains("no such file or directory")) {
        throw new ImageNotFoundException(
            "image '"
                + spec.image()
                + "' has no python3, which the AgentNest agent needs: use an image with python3,"
                + " e.g. "
                + SandboxConfig.DEFAULT_IMAGE
                + " ('agentnest image build')");
      }
      if (e instanceof DockerException) {
        throw new AgentNestException("Docker could not start the sandbox: " + msg, e);
      }
      if (e instanceof AgentNestException ane) {
        throw ane;
      }
      throw unavailable(e);
    }
  }

  private String createContainer(SandboxSpec spec) {
    if (!imageExists(spec.image())) {
      String how =
          spec.image().equals(SandboxConfig.DEFAULT_IMAGE)
              ? "build it offline with 'agentnest image build'"
              : "pull it with 'docker pull " + spec.image() + "' or build it";
      throw new ImageNotFoundException(
          "image '" + spec.image() + "' is not present in the Docker engine: " + how);
    }
    List<String> weakened = new ArrayList<>();
    if (!spec.networkDisabled()) {
      weakened.add("network (it must be 'none')");
    }
    if (!spec.dropAllCapabilities()) {
      weakened.add("capabilities (all must be dropped)");
    }
    if (!spec.noNewPrivileges()) {
      weakened.add("no-new-privileges (it must be set)");
    }
    if (!weakened.isEmpty()) {
      // This backend only knows how to run sandboxes hardened; anything else is refused.
      throw new UnsupportedControlException(
          "the docker backend cannot run a sandbox with these controls weakened: "
              + String.join(", ", weakened)
              + "; remove the override, it enforces all of them");
    }
    String runtime = resolveRuntime(spec.runtime());
    HostConfig hc =
        HostConfig.newHostConfig()
            .withReadonlyRootfs(spec.readOnlyRootFilesystem())
            .withCapDrop(Capability.ALL)
            .withSecurityOpts(
                List.of(
                    "no-new-privileges:true",
                    "seccomp=" + GvisorSeccomp.adapt(spec.seccompProfileJson(), runtime)))
            .withPidsLimit(spec.pidsLimit())
            .withMemory(spec.memoryBytes())
            .withMemorySwap(spec.memoryBytes())
            .withNanoCPUs((long) (spec.cpus() * 1_000_000_000L))
            .withNetworkMode("none")
            .withLogConfig(new LogConfig(LogConfig.LoggingType.NONE))
            // No --init: the agent's bootstrap is pid 1 itself. Docker's init kept copies of
            // the channel pipes open in a process sandbox code could reach through /proc.
            .withInit(false)
            .withIpcMode("private")
            .withTmpFs(tmpfs(spec))
            .withUlimits(
                List.of(
                    new com.github.dockerjava.api.model.Ulimit(
                        "nofile", spec.openFilesLimit(), spec.openFilesLimit())))
            .withAutoRemove(false);
    if (runtime != null) {
      hc.withRuntime(runtime);
    }
    Map<String, String> labels = new LinkedHashMap<>(spec.labels());
    java.nio.file.@Nullable Path bulk =
        runtime != null && runtime.contains("runsc") ? null : newBulkDir(spec.user());
    if (bulk != null) {
      hc.withBinds(
          new com.github.dockerjava.api.model.Bind(
              bulk.toString(),
              new com.github.dockerjava.api.model.Volume(BULK_MOUNT),
              com.github.dockerjava.api.model.AccessMode.ro));
      labels.put(Labels.BULK_DIR, bulk.toString());
    }
    String id;
    try {
      CreateContainerCmd cmd =
          client
              .createContainerCmd(spec.image())
              .withCmd(spec.command())
              .withEntrypoint(List.of())
              .withUser(spec.user())
              .withEnv(env(spec.env()))
              .withWorkingDir(spec.workdir())
              .withLabels(labels)
              .withAttachStdin(true)
              .withAttachStdout(true)
              .withAttachStderr(true)
              .withStdinOpen(true)
              .withStdInOnce(false)
              .withTty(false)
              .withNetworkDisabled(true)
              .withHostConfig(hc);
      id = cmd.exec().getId();
    } catch (RuntimeException e) {
      deleteBulkDir(bulk);
      throw createFailed(spec, e);
    }
    return id;
  }

  private RuntimeException createFailed(SandboxSpec spec, RuntimeException e) {
    if (e instanceof NotFoundException) {
      knownImages.remove(spec.image());
      return new ImageNotFoundException("image '" + spec.image() + "' vanished: " + e.getMessage());
    }
    if (e instanceof DockerException) {
      return new AgentNestException("Docker refused to create the sandbox: " + e.getMessage(), e);
    }
    return unavailable(e);
  }

  // ------------------------------------------------------------------------------ bulk link

  /** Where a sandbox sees its bulk directory (read-only); the socket in it is the host's. */
  static final String BULK_MOUNT = "/run/agentnest";

  private static final java.nio.file.Path BULK_ROOT = java.nio.file.Path.of("/run/agentnest/bulk");
  private static final java.util.regex.Pattern BULK_NAME =
      java.util.regex.Pattern.compile("/run/agentnest/bulk/[0-9a-f]{32}");
  private volatile @Nullable Boolean bulkUsable;

  /**
   * A fresh per-sandbox directory for the bulk link, or null where the engine is not on this host
   * (a TCP or SSH daemon: its bind mounts name the daemon's paths), /run is not writable here, or
   * the directory cannot be closed to all but the sandbox's {@code user} (see BulkDirAccess).
   */
  private java.nio.file.@Nullable Path newBulkDir(String user) {
    Boolean usable = bulkUsable;
    if (usable == null) {
      usable = "unix".equals(host.getScheme()) && makeBulkRoot();
      bulkUsable = usable;
    }
    if (!usable) {
      return null;
    }
    byte[] r = new byte[16];
    RANDOM.nextBytes(r);
    java.nio.file.Path dir = BULK_ROOT.resolve(java.util.HexFormat.of().formatHex(r));
    try {
      java.nio.file.Files.createDirectory(dir);
    } catch (java.io.IOException | UnsupportedOperationException e) {
      return null;
    }
    if (!BulkDirAccess.restrict(dir, user)) {
      deleteBulkDir(dir);
      return null;
    }
    return dir;
  }

  private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

  private static boolean makeBulkRoot() {
    try {
      java.nio.file.Files.createDirectories(BULK_ROOT);
      return java.nio.file.Files.isWritable(BULK_ROOT);
    } catch (java.io.IOException | RuntimeException e) {
      return false;
    }
  }

  private static void deleteBulkDir(java.nio.file.@Nullable Path dir) {
    if (dir != null && BULK_NAME.matcher(dir.toString()).matches()) {
      try {
        io.agentnest.internal.support.HostFiles.deleteTree(dir);
      } catch (java.io.IOException | RuntimeException e) {
        // Best effort: /run is a tmpfs, emptied at the next boot anyway.
      }
    }
  }

  /**
   * The bulk directory of a managed sandbox, checked to be one this engine makes and closed to all
   * but the sandbox's own group.
   */
  public Optional<java.nio.file.Path> bulkDirectory(String id) {
    try {
      InspectContainerResponse c = client.inspectContainerCmd(id).exec();
      String user = c.getConfig() == null ? null : c.getConfig().getUser();
      return bulkDirOf(c).filter(d -> user != null && BulkDirAccess.restricted(d, user));
    } catch (NotFoundException e) {
      return Optional.empty();
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
  }

  private static Optional<java.nio.file.Path> bulkDirOf(InspectContainerResponse c) {
    Map<String, String> labels = c.getConfig() == null ? null : c.getConfig().getLabels();
    String dir = labels == null ? null : labels.get(Labels.BULK_DIR);
    if (dir == null || !BULK_NAME.matcher(dir).matches()) {
      return Optional.empty();
    }
    java.nio.file.Path p = java.nio.file.Path.of(dir);
    return java.nio.file.Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)
        ? Optional.of(p)
        : Optional.empty();
  }

  /**
   * Fork with process memory (gVisor): the parent is checkpointed (runsc stops it; it cannot leave
   * it running), restored from its own checkpoint at once, and the checkpoint is linked into each
   * new container's checkpoint directory and restored there. Needs the engine's root directory on
   * this host (a local daemon run as root); otherwise empty, with nothing done.
   */
  public Optional<List<BackendSandbox>> forkWithCheckpoint(
      String parentId,
      SandboxSpec spec,
      int n,
      Runnable beforeCheckpoint,
      java.util.function.Consumer<BackendSandbox> parentRestored) {
    Optional<Checkpointable> target = checkpointable(parentId);
    if (target.isEmpty()) {
      return Optional.empty();
    }
    Checkpointable parent = target.get();
    String name = "agentnest-fork-" + Long.toHexString(System.nanoTime());
    List<String> kids = new ArrayList<>();
    List<BackendSandbox> attached = new ArrayList<>();
    boolean parentStopped = false;
    java.nio.file.Path image = null;
    try {
      // Children are created (not started) first: the parent is stopped for as short as can be.
      for (int i = 0; i < n; i++) {
        kids.add(createContainer(spec));
      }
      beforeCheckpoint.run();
      parentStopped = true;
      engineCall(
          "POST",
          "/containers/" + parent.id() + "/checkpoints",
          "{\"CheckpointID\":\"" + name + "\",\"Exit\":true}");
      image = parent.dir().resolve("checkpoints").resolve(name);
      // The parent and every copy restore the same image at once (runsc only reads it).
      java.nio.file.Path shared = image;
      java.util.concurrent.CompletableFuture<BackendSandbox> back =
          java.util.concurrent.CompletableFuture.supplyAsync(
              () -> restoreFromCheckpoint(parent.id(), name), RESTORES);
      List<java.util.concurrent.CompletableFuture<BackendSandbox>> copies = new ArrayList<>();
      for (String kid : kids) {
        copies.add(
            java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return startFromImage(parent.root(), kid, name, shared);
                  } catch (java.io.IOException e) {
                    throw new AgentNestException(
                        "cannot place the checkpoint image: " + e.getMessage(), e);
                  }
                },
                RESTORES));
      }
      RuntimeException failed = null;
      try {
        parentRestored.accept(io.agentnest.internal.support.DaemonThreads.join(back));
        parentStopped = false;
      } catch (RuntimeException e) {
        failed = e;
      }
      for (java.util.concurrent.CompletableFuture<BackendSandbox> c : copies) {
        try {
          attached.add(io.agentnest.internal.support.DaemonThreads.join(c));
        } catch (RuntimeException e) {
          failed = failed == null ? e : failed;
        }
      }
      if (failed != null) {
        throw failed;
      }
      return Optional.of(attached);
    } catch (RuntimeException e) {
      attached.forEach(BackendSandbox::close);
      kids.forEach(this::remove);
      throw checkpointFailed("fork with checkpoint of sandbox " + parentId, e, parentStopped);
    } finally {
      deleteQuietly(image);
    }
  }

  /**
   * Checkpoints sandbox {@code id} (gVisor), restores it in place at once and moves the checkpoint
   * image's files to {@code dir}. False, with nothing done, when the sandbox does not run on runsc
   * or the engine's root directory is not writable here.
   */
  public boolean checkpointTo(
      String id,
      java.nio.file.Path dir,
      Runnable beforeCheckpoint,
      java.util.function.Consumer<BackendSandbox> restored) {
    Optional<Checkpointable> target = checkpointable(id);
    if (target.isEmpty()) {
      return false;
    }
    String name = "agentnest-snapshot-" + Long.toHexString(System.nanoTime());
    boolean stopped = false;
    java.nio.file.Path image = null;
    try {
      beforeCheckpoint.run();
      stopped = true;
      image = checkpointInPlace(target.get(), name, restored);
      stopped = false;
      linkTree(image, dir);
      return true;
    } catch (RuntimeException | java.io.IOException e) {
      throw checkpointFailed("checkpoint of sandbox " + id, e, stopped);
    } finally {
      deleteQuietly(image);
    }
  }

  /**
   * Creates a container from {@code spec} and starts it from the checkpoint image in {@code dir}
   * (linked into the container's checkpoint directory, so read-only use shares the files). Empty,
   * with nothing done, when the spec's runtime is not runsc or the engine's root directory is not
   * writable here.
   */
  public Optional<BackendSandbox> createFromCheckpoint(SandboxSpec spec, java.nio.file.Path dir) {
    String runtime = resolveRuntime(spec.runtime());
    Optional<java.nio.file.Path> root = writableRoot();
    if (runtime == null || !runtime.contains("runsc") || root.isEmpty()) {
      return Optional.empty();
    }
    String id = createContainer(spec);
    try {
      return Optional.of(
          startFromImage(
              root.get(), id, "agentnest-restore-" + Long.toHexString(System.nanoTime()), dir));
    } catch (RuntimeException | java.io.IOException e) {
      remove(id);
      String msg = e.getMessage() == null ? e.toString() : e.getMessage();
      throw new AgentNestException(
          "gVisor could not start a sandbox from the checkpoint: "
              + msg
              + " (a checkpoint restores only with the gVisor version and container settings"
              + " that wrote it; check 'agentnest doctor')",
          e);
    }
  }

  /** A running gVisor container whose engine directories this process can write. */
  private record Checkpointable(String id, java.nio.file.Path root, java.nio.file.Path dir) {}

  private Optional<Checkpointable> checkpointable(String idOrPrefix) {
    InspectContainerResponse c = inspectContainer(idOrPrefix);
    String runtime = c.getHostConfig() == null ? null : c.getHostConfig().getRuntime();
    if (runtime == null || !runtime.contains("runsc")) {
      return Optional.empty();
    }
    Optional<java.nio.file.Path> root = writableRoot();
    if (root.isEmpty()) {
      return Optional.empty();
    }
    java.nio.file.Path dir = root.get().resolve("containers").resolve(c.getId());
    if (!java.nio.file.Files.isWritable(dir)) {
      return Optional.empty();
    }
    return Optional.of(new Checkpointable(c.getId(), root.get(), dir));
  }

  /** The engine's root directory, when its containers live on this host and are writable. */
  private Optional<java.nio.file.Path> writableRoot() {
    java.nio.file.Path root;
    try {
      root = java.nio.file.Path.of(client.infoCmd().exec().getDockerRootDir());
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    return java.nio.file.Files.isWritable(root.resolve("containers"))
        ? Optional.of(root)
        : Optional.empty();
  }

  /**
   * Stops the sandbox into checkpoint {@code name} (runsc cannot leave it running) and starts it
   * again from it at once; returns the checkpoint image's directory, which the caller removes.
   */
  private java.nio.file.Path checkpointInPlace(
      Checkpointable c, String name, java.util.function.Consumer<BackendSandbox> restored) {
    engineCall(
        "POST",
        "/containers/" + c.id() + "/checkpoints",
        "{\"CheckpointID\":\"" + name + "\",\"Exit\":true}");
    restored.accept(restoreFromCheckpoint(c.id(), name));
    return c.dir().resolve("checkpoints").resolve(name);
  }

  private static final java.util.concurrent.ExecutorService RESTORES =
      io.agentnest.internal.support.DaemonThreads.pool("agentnest-restore");

  /** Starts created container {@code id} from the checkpoint image in {@code image}. */
  private BackendSandbox startFromImage(
      java.nio.file.Path root, String id, String name, java.nio.file.Path image)
      throws java.io.IOException {
    java.nio.file.Path dir =
        root.resolve("containers").resolve(id).resolve("checkpoints").resolve(name);
    linkTree(image, dir);
    try {
      return restoreFromCheckpoint(id, name);
    } finally {
      deleteQuietly(dir);
    }
  }

  private static AgentNestException checkpointFailed(String what, Exception e, boolean stopped) {
    String msg = e.getMessage() == null ? e.toString() : e.getMessage();
    return new AgentNestException(
        what
            + " failed: "
            + msg
            + (stopped
                ? "; the sandbox could not be restored and is stopped: destroy it"
                : "; the sandbox is unchanged")
            + " (check 'agentnest doctor': gVisor checkpoints need an experimental local"
            + " dockerd)",
        e);
  }

  private static void deleteQuietly(java.nio.file.@Nullable Path dir) {
    if (dir == null) {
      return;
    }
    try {
      io.agentnest.internal.support.HostFiles.deleteTree(dir);
    } catch (java.io.IOException e) {
      // the engine removes a container's checkpoints with the container
    }
  }

  private BackendSandbox restoreFromCheckpoint(String id, String checkpoint) {
    BackendSandbox att = openAttachment(id);
    try {
      // The engine answers the checkpoint before runsc has released the stopped sandbox's id;
      // a start until then is refused with "id already in use". A start right after a
      // checkpoint can also lose dockerd's race uploading the checkpoint to containerd
      // ("failed to upload checkpoint ... already exists", moby/moby#42900); a retry a moment
      // later succeeds. Bounded: about 10 s.
      for (int attempt = 0; ; attempt++) {
        try {
          engineCall("POST", "/containers/" + id + "/start?checkpoint=" + enc(checkpoint), null);
          break;
        } catch (AgentNestException e) {
          String m = String.valueOf(e.getMessage());
          boolean transient_ =
              m.contains("already in use")
                  || (m.contains("failed to upload checkpoint") && m.contains("already exists"));
          if (attempt >= 20 || !transient_) {
            throw e;
          }
          if (attempt == 5) {
            clearStaleRunscState(id);
          }
          sleepQuietly(100);
          // A refused start ends the streams of the attachment made for it.
          att.close();
          att = openAttachment(id);
        }
      }
      return att;
    } catch (RuntimeException e) {
      att.close();
      throw e;
    }
  }

  /**
   * runsc (2022-12, Debian 12) leaves a sandbox that was itself restored from a checkpoint paused
   * after its next checkpoint, with its state file in place, so the engine cannot start the
   * container again ("id already in use"). Deleting that state with runsc itself frees the id.
   */
  private static void clearStaleRunscState(String id) {
    java.nio.file.Path run = java.nio.file.Path.of("/run/docker");
    String state = id + "_sandbox:" + id + ".state";
    try (java.util.stream.Stream<java.nio.file.Path> roots = java.nio.file.Files.list(run)) {
      for (java.nio.file.Path r : (Iterable<java.nio.file.Path>) roots::iterator) {
        java.nio.file.Path root = r.resolve("moby");
        if (r.getFileName().toString().startsWith("runtime-")
            && java.nio.file.Files.exists(root.resolve(state))) {
          Process p =
              new ProcessBuilder("runsc", "--root", root.toString(), "delete", "--force", id)
                  .redirectErrorStream(true)
                  .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                  .start();
          if (!p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
            p.destroyForcibly();
          }
        }
      }
    } catch (java.io.IOException e) {
      // Nothing to clear, or no runsc on PATH: the start below reports the engine's error.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while restoring a checkpoint", ie);
    }
  }

  /** A checkpoint is read, never written, by a restore: every copy can share its files. */
  private static void linkTree(java.nio.file.Path from, java.nio.file.Path to)
      throws java.io.IOException {
    java.nio.file.Files.createDirectories(to);
    try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(from)) {
      for (java.nio.file.Path f : (Iterable<java.nio.file.Path>) files::iterator) {
        java.nio.file.Path t = to.resolve(f.getFileName().toString());
        if (java.nio.file.Files.isDirectory(f, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
          linkTree(f, t);
        } else if (java.nio.file.Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
          try {
            java.nio.file.Files.createLink(t, f);
          } catch (java.io.IOException | UnsupportedOperationException e) {
            java.nio.file.Files.copy(f, t);
          }
        }
      }
    }
  }

  /** An engine call docker-java has no command for (checkpoints); fails on any non-2xx status. */
  private void engineCall(String method, String path, @Nullable String json) {
    DockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(host)
            .maxConnections(1)
            .responseTimeout(Duration.ofMinutes(5))
            .build();
    DockerHttpClient.Request.Builder b =
        DockerHttpClient.Request.builder()
            .method(DockerHttpClient.Request.Method.valueOf(method))
            .path(path);
    if (json != null) {
      b.putHeader("Content-Type", "application/json")
          .bodyBytes(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    try (http;
        DockerHttpClient.Response resp = http.execute(b.build())) {
      int code = resp.getStatusCode();
      if (code / 100 != 2) {
        byte[] body = resp.getBody().readNBytes(4096);
        throw new AgentNestException(
            "Docker refused "
                + method
                + " "
                + path.replaceAll("\\?.*", "")
                + " (HTTP "
                + code
                + "): "
                + new String(body, java.nio.charset.StandardCharsets.UTF_8).strip());
      }
    } catch (java.io.IOException e) {
      throw new AgentNestException("Docker call " + method + " failed: " + e.getMessage(), e);
    }
  }

  private static Map<String, String> tmpfs(SandboxSpec spec) {
    Map<String, String> out = new LinkedHashMap<>();
    String[] ug = spec.user().split(":");
    String uid = ug[0];
    String gid = ug.length > 1 ? ug[1] : ug[0];
    spec.tmpfs()
        .forEach(
            (path, size) -> {
              String opts = "rw,nosuid,nodev,size=" + size;
              if (path.equals("/tmp")) {
                opts += ",mode=1777";
              } else {
                opts += ",mode=0755,uid=" + uid + ",gid=" + gid;
              }
              out.put(path, opts);
            });
    return out;
  }

  private static List<String> env(Map<String, String> env) {
    List<String> out = new ArrayList<>();
    env.forEach((k, v) -> out.add(k + "=" + v));
    return out;
  }

  public BackendSandbox attach(String idOrPrefix) {
    InspectContainerResponse c = inspectContainer(idOrPrefix);
    Map<String, String> labels = c.getConfig().getLabels();
    if (labels == null || !"true".equals(labels.get(Labels.MANAGED))) {
      throw new SandboxNotFoundException(
          "container "
              + idOrPrefix
              + " is not an AgentNest sandbox: list them with 'agentnest ls'");
    }
    if (c.getState() == null || !Boolean.TRUE.equals(c.getState().getRunning())) {
      throw new SandboxNotFoundException(
          "sandbox "
              + idOrPrefix
              + " is not running (its agent exited): remove it with 'agentnest rm "
              + idOrPrefix
              + "'");
    }
    return openAttachment(c.getId());
  }

  private BackendSandbox openAttachment(String id) {
    if ("unix".equals(host.getScheme()) && host.getPath() != null) {
      return new UnixSocketAttachment(java.nio.file.Path.of(host.getPath()), id);
    }
    return new DockerAttachment(host, id);
  }

  private InspectContainerResponse inspectContainer(String idOrPrefix) {
    if (!idOrPrefix.matches("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")) {
      throw new SandboxNotFoundException("'" + idOrPrefix + "' is not a sandbox id");
    }
    try {
      return client.inspectContainerCmd(idOrPrefix).exec();
    } catch (NotFoundException e) {
      throw new SandboxNotFoundException(
          "no sandbox " + idOrPrefix + ": list them with 'agentnest ls'");
    } catch (DockerException e) {
      throw new AgentNestException(
          "Docker could not inspect " + idOrPrefix + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
  }

  public List<SandboxInfo> listManaged() {
    List<Container> cs;
    try {
      cs =
          client
              .listContainersCmd()
              .withShowAll(true)
              .withLabelFilter(Map.of(Labels.MANAGED, "true"))
              .exec();
    } catch (DockerException e) {
      throw new AgentNestException("Docker could not list containers: " + e.getMessage());
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
    List<SandboxInfo> out = new ArrayList<>();
    for (Container c : cs) {
      Map<String, String> labels = c.getLabels() == null ? Map.of() : c.getLabels();
      out.add(
          new SandboxInfo(
              c.getId(),
              "docker",
              c.getImage() == null ? "" : c.getImage(),
              runtimeOf(c.getId()),
              c.getState() == null ? "unknown" : c.getState(),
              Instant.ofEpochSecond(c.getCreated() == null ? 0 : c.getCreated()),
              labels));
    }
    return out;
  }

  private String runtimeOf(String id) {
    try {
      String r = client.inspectContainerCmd(id).exec().getHostConfig().getRuntime();
      return r == null ? "runc" : r;
    } catch (RuntimeException e) {
      return "unknown";
    }
  }

  public Optional<SandboxInfo> inspectManaged(String idOrPrefix) {
    InspectContainerResponse c;
    try {
      c = inspectContainer(idOrPrefix);
    } catch (SandboxNotFoundException e) {
      return Optional.empty();
    }
    Map<String, String> labels =
        c.getConfig().getLabels() == null ? Map.of() : c.getConfig().getLabels();
    if (!"true".equals(labels.get(Labels.MANAGED))) {
      return Optional.empty();
    }
    String runtime = c.getHostConfig() == null ? null : c.getHostConfig().getRuntime();
    String state = c.getState() == null ? null : c.getState().getStatus();
    Instant created;
    try {
      created = Instant.parse(c.getCreated());
    } catch (RuntimeException e) {
      created = Instant.EPOCH;
    }
    return Optional.of(
        new SandboxInfo(
            c.getId(),
            "docker",
            c.getConfig().getImage() == null ? "" : c.getConfig().getImage(),
            runtime == null ? "runc" : runtime,
            state == null ? "unknown" : state,
            created,
            labels));
  }

  /**
   * Imports a root filesystem tar as an image ({@code docker import}), with Dockerfile-style {@code
   * changes} such as {@code ENV LANG=C.UTF-8}. Returns the engine's last status line.
   */
  public String importImage(
      java.io.InputStream tar, String repo, String tag, List<String> changes) {
    StringBuilder path = new StringBuilder("/images/create?fromSrc=-");
    path.append("&repo=").append(enc(repo)).append("&tag=").append(enc(tag));
    for (String c : changes) {
      path.append("&changes=").append(enc(c));
    }
    DockerHttpClient http =
        new ApacheDockerHttpClient.Builder().dockerHost(host).maxConnections(1).build();
    try (http;
        DockerHttpClient.Response resp =
            http.execute(
                DockerHttpClient.Request.builder()
                    .method(DockerHttpClient.Request.Method.POST)
                    .path(path.toString())
                    .putHeader("Content-Type", "application/x-tar")
                    .body(tar)
                    .build())) {
      byte[] body = resp.getBody().readNBytes(1 << 20);
      String text = new String(body, java.nio.charset.StandardCharsets.UTF_8);
      if (resp.getStatusCode() != 200 || text.contains("\"error")) {
        throw new AgentNestException(
            "Docker could not import the image (HTTP "
                + resp.getStatusCode()
                + "): "
                + text.strip());
      }
      knownImages.remove(repo + ":" + tag);
      return text.strip();
    } catch (java.io.IOException e) {
      throw new AgentNestException("image import failed: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      if (e instanceof AgentNestException ane) {
        throw ane;
      }
      throw unavailable(e);
    }
  }

  private static String enc(String s) {
    return java.net.URLEncoder.encode(s, java.nio.charset.StandardCharsets.UTF_8);
  }

  /** Every container, network and volume labelled as managed by AgentNest. */
  public List<ManagedResource> resources() {
    Map<String, String> filter = Map.of(Labels.MANAGED, "true");
    List<ManagedResource> out = new ArrayList<>();
    try {
      for (Container c :
          client
              .listContainersCmd()
              .withShowAll(true)
              .withShowSize(true)
              .withLabelFilter(filter)
              .exec()) {
        out.add(
            new ManagedResource(
                "container",
                c.getId(),
                c.getNames() != null && c.getNames().length > 0 ? c.getNames()[0] : c.getId(),
                c.getState() == null ? "unknown" : c.getState(),
                Instant.ofEpochSecond(c.getCreated() == null ? 0 : c.getCreated()),
                c.getSizeRw() == null ? -1 : c.getSizeRw(),
                c.getLabels() == null ? Map.of() : c.getLabels()));
      }
      out.addAll(orphanedBulkDirs(out));
      for (com.github.dockerjava.api.model.Network n :
          client.listNetworksCmd().withFilter("label", List.of(Labels.MANAGED + "=true")).exec()) {
        out.add(
            new ManagedResource(
                "network",
                n.getId(),
                n.getName(),
                "",
                n.getCreated() == null ? Instant.EPOCH : n.getCreated().toInstant(),
                -1,
                n.getLabels() == null ? Map.of() : n.getLabels()));
      }
      var volumes =
          client.listVolumesCmd().withFilter("label", List.of(Labels.MANAGED + "=true")).exec();
      if (volumes.getVolumes() != null) {
        for (var v : volumes.getVolumes()) {
          Map<String, String> labels = v.getLabels() == null ? Map.of() : v.getLabels();
          out.add(
              new ManagedResource(
                  "volume", v.getName(), v.getName(), "", Instant.EPOCH, -1, labels));
        }
      }
    } catch (DockerException e) {
      throw new AgentNestException("Docker could not list managed resources: " + e.getMessage());
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
    return out;
  }

  /**
   * Bulk directories no managed container names (its container was removed behind AgentNest's back,
   * e.g. with {@code docker rm}); prune removes them.
   */
  private static List<ManagedResource> orphanedBulkDirs(List<ManagedResource> containers) {
    Set<String> used = new java.util.HashSet<>();
    containers.forEach(
        c -> {
          String d = c.labels().get(Labels.BULK_DIR);
          if (d != null) {
            used.add(d);
          }
        });
    List<ManagedResource> out = new ArrayList<>();
    if (!java.nio.file.Files.isDirectory(BULK_ROOT)) {
      return out;
    }
    try (java.util.stream.Stream<java.nio.file.Path> dirs = java.nio.file.Files.list(BULK_ROOT)) {
      for (java.nio.file.Path d : (Iterable<java.nio.file.Path>) dirs::iterator) {
        String path = d.toString();
        if (BULK_NAME.matcher(path).matches() && !used.contains(path) && out.size() < 10_000) {
          Instant created =
              java.nio.file.Files.getLastModifiedTime(d, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                  .toInstant();
          out.add(
              new ManagedResource(
                  BULK_DIR_KIND,
                  path,
                  d.getFileName().toString(),
                  "orphaned",
                  created,
                  -1,
                  Map.of()));
        }
      }
    } catch (java.io.IOException e) {
      // Unreadable: nothing to offer for pruning.
    }
    return out;
  }

  /** The kind of a {@link ManagedResource} that is an orphaned bulk directory. */
  public static final String BULK_DIR_KIND = "bulk-dir";

  public void removeResource(ManagedResource r) {
    try {
      switch (r.kind()) {
        case BULK_DIR_KIND -> deleteBulkDir(java.nio.file.Path.of(r.id()));
        case "container" -> remove(r.id());
        case "network" -> client.removeNetworkCmd(r.id()).exec();
        case "volume" -> client.removeVolumeCmd(r.id()).exec();
        default -> throw new AgentNestException("unknown resource kind " + r.kind());
      }
    } catch (NotFoundException e) {
      // already gone
    } catch (DockerException e) {
      throw new AgentNestException(
          "Docker could not remove " + r.kind() + " " + r.id() + ": " + e.getMessage());
    } catch (AgentNestException e) {
      throw e;
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
  }

  /** Force-removes a container; a no-op when it is already gone. */
  public void remove(String id) {
    try {
      Optional<java.nio.file.Path> bulk = Optional.empty();
      try {
        bulk = bulkDirOf(client.inspectContainerCmd(id).exec());
      } catch (NotFoundException e) {
        // removed below, idempotently
      }
      client.removeContainerCmd(id).withForce(true).withRemoveVolumes(true).exec();
      bulk.ifPresent(DockerEngine::deleteBulkDir);
    } catch (NotFoundException e) {
      // already gone: destroy is idempotent
    } catch (DockerException e) {
      if (e.getHttpStatus() == 409 && String.valueOf(e.getMessage()).contains("in progress")) {
        return;
      }
      throw new AgentNestException("Docker could not remove sandbox " + id + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw unavailable(e);
    }
  }
}
