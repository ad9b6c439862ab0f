package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.HostConfig;
import io.agentnest.AgentNestException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.config.Presets;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.SocketConnection;
import io.agentnest.spi.support.StartTrace;
import java.net.URI;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Sandbox containers: create, attach to the agent's channel, inspect, list and remove. */
final class DockerContainers {
  private static final Logger LOG = LoggerFactory.getLogger(DockerContainers.class);

  private final DockerClient client;
  private final URI host;
  private final EngineErrors errors;
  private final DockerImages images;
  private final DockerRuntimes runtimes;
  private final BulkDirs bulk;

  DockerContainers(
      DockerClient client,
      URI host,
      EngineErrors errors,
      DockerImages images,
      DockerRuntimes runtimes,
      BulkDirs bulk) {
    this.client = client;
    this.host = host;
    this.errors = errors;
    this.images = images;
    this.runtimes = runtimes;
    this.bulk = bulk;
  }

  BackendSandbox create(SandboxSpec spec) {
    Created c = createContainer(spec, AgentLinks.enabled());
    String id = c.id();
    AgentLinks.Pending link = c.link();
    BackendSandbox att = null;
    try {
      if (link != null) {
        client.startContainerCmd(id).exec();
        StartTrace.mark("engine start");
        // The agent's stderr is /dev/null once it runs: what the engine knows of the container
        // (its exit status, a kill for memory) is what is left to say when the channel fails.
        att =
            new SocketConnection(
                id,
                AgentLinks.await(link, () -> !running(id), () -> stateOf(id)),
                new byte[0],
                () -> stateOf(id));
        StartTrace.mark("agent link");
        return att;
      }
      att = openAttachment(id);
      StartTrace.mark("engine attach");
      client.startContainerCmd(id).exec();
      StartTrace.mark("engine start");
      return att;
    } catch (RuntimeException e) {
      if (att != null) {
        att.close();
      }
      remove(id);
      throw startFailed(spec, e);
    } finally {
      if (link != null) {
        link.close();
      }
    }
  }

  private RuntimeException startFailed(SandboxSpec spec, RuntimeException e) {
    String msg = e.getMessage() == null ? e.toString() : e.getMessage();
    if (msg.contains("executable file not found") || msg.contains("no such file or directory")) {
      return new ImageNotFoundException(
          "image '"
              + spec.image()
              + "' has no python3, which the AgentNest agent needs: use an image with python3,"
              + " e.g. "
              + SandboxConfig.DEFAULT_IMAGE
              + " ('agentnest image build')");
    }
    if (e instanceof DockerException) {
      return new AgentNestException("Docker could not start the sandbox: " + msg, e);
    }
    if (e instanceof AgentNestException ane) {
      return ane;
    }
    return errors.unavailable(e);
  }

  private boolean running(String id) {
    try {
      InspectContainerResponse c = client.inspectContainerCmd(id).exec();
      return c.getState() != null && Boolean.TRUE.equals(c.getState().getRunning());
    } catch (NotFoundException e) {
      return false;
    } catch (RuntimeException e) {
      // The engine did not answer: keep waiting for the agent, the deadline still holds.
      return true;
    }
  }

  /** What the engine knows of a container that may have ended: for failure messages only. */
  String stateOf(String id) {
    try {
      InspectContainerResponse.ContainerState st = client.inspectContainerCmd(id).exec().getState();
      if (st == null) {
        return "the engine reports no state for it";
      }
      if (Boolean.TRUE.equals(st.getRunning())) {
        return "its container is still running";
      }
      Long code = st.getExitCodeLong();
      return AgentLinks.exitReason(
          code == null ? -1 : code, Boolean.TRUE.equals(st.getOOMKilled()));
    } catch (NotFoundException e) {
      return "its container is gone";
    } catch (RuntimeException e) {
      return "the engine did not say (" + e.getMessage() + ")";
    }
  }

  /** Creates the container without starting it (a fork starts it from a checkpoint). */
  String createStopped(SandboxSpec spec) {
    return createContainer(spec, false).id();
  }

  /** A created container, and the listener its agent will connect to when it has a link. */
  private record Created(String id, AgentLinks.@Nullable Pending link) {}

  /**
   * How to get a missing image: AgentNest's own images (the base one, the presets') are built
   * offline, never pulled (no registry serves them); any other is the user's to pull or build.
   */
  private static String howToGet(SandboxSpec spec) {
    String image = spec.image();
    if (image.equals(SandboxConfig.DEFAULT_IMAGE)) {
      return "build it offline with 'agentnest image build'";
    }
    for (String preset : Presets.BUILT_IN) {
      if (image.equals(Presets.get(preset).image())) {
        return "build it offline with 'agentnest image build --preset " + preset + "'";
      }
    }
    if (image.startsWith("agentnest/")) {
      return "no registry serves AgentNest's images: build it offline with 'agentnest image build"
          + " --tag "
          + image
          + "' (or --preset NAME), or name an image you have ('docker images')";
    }
    return "pull it with 'docker pull " + image + "' or build it";
  }

  private Created createContainer(SandboxSpec spec, boolean withLink) {
    if (!images.exists(spec.image())) {
      throw new ImageNotFoundException(
          "image '" + spec.image() + "' is not present in the Docker engine: " + howToGet(spec));
    }
    ContainerSpecs.refuseWeakened(spec);
    String runtime = runtimes.resolve(spec.runtime());
    DockerGpus.check(runtimes.registered().keySet(), runtime, spec.gpus());
    runtimes.checkFits(spec.cpus(), spec.memoryBytes());
    StartTrace.mark("image and runtime check");
    Map<String, String> labels = new LinkedHashMap<>(spec.labels());
    @Nullable Path dir = DockerRuntimes.isGvisor(runtime) ? null : bulk.create(spec.user());
    if (dir != null) {
      labels.put(Labels.BULK_DIR, dir.toString());
    }
    String effective = runtime == null ? runtimes.defaultRuntime() : runtime;
    labels.put(Labels.RUNTIME, effective);
    HostConfig hc = ContainerSpecs.hostConfig(spec, runtime, dir);
    AgentLinks.Pending link = null;
    try {
      Map<String, String> env = spec.env();
      if (withLink && dir != null && DockerRuntimes.sharesHostKernel(effective)) {
        link = listen(dir);
      }
      if (link != null || env.containsKey(AgentLinks.ENV)) {
        // Only the host names a link: a configured variable of that name would send the
        // bootstrap to a socket nobody listens on.
        env = new LinkedHashMap<>(env);
        env.remove(AgentLinks.ENV);
        if (link != null) {
          env.put(AgentLinks.ENV, link.env());
        }
      }
      String id =
          ContainerSpecs.container(client.createContainerCmd(spec.image()), spec, env, labels, hc)
              .exec()
              .getId();
      StartTrace.mark("engine create");
      return new Created(id, link);
    } catch (RuntimeException e) {
      if (link != null) {
        link.close();
      }
      BulkDirs.delete(dir);
      throw createFailed(spec, e);
    }
  }

  /** The link's listener, or none (the channel then goes through attach, as without a link). */
  private static AgentLinks.@Nullable Pending listen(Path dir) {
    try {
      return AgentLinks.listen(dir);
    } catch (AgentNestException e) {
      LOG.debug("no agent link in {}: {}", dir, e.getMessage());
      return null;
    }
  }

  private RuntimeException createFailed(SandboxSpec spec, RuntimeException e) {
    if (e instanceof NotFoundException) {
      images.forget(spec.image());
      return new ImageNotFoundException("image '" + spec.image() + "' vanished: " + e.getMessage());
    }
    if (e instanceof DockerException) {
      return new AgentNestException("Docker refused to create the sandbox: " + e.getMessage(), e);
    }
    return errors.unavailable(e);
  }

  BackendSandbox attach(String idOrPrefix) {
    InspectContainerResponse c = inspect(idOrPrefix);
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

  BackendSandbox openAttachment(String id) {
    if ("unix".equals(host.getScheme()) && host.getPath() != null) {
      return new UnixSocketAttachment(Path.of(host.getPath()), id);
    }
    return new DockerAttachment(host, id);
  }

  InspectContainerResponse inspect(String idOrPrefix) {
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
      throw errors.unavailable(e);
    }
  }

  List<SandboxInfo> listManaged() {
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
      throw errors.unavailable(e);
    }
    List<SandboxInfo> out = new ArrayList<>();
    for (Container c : cs) {
      Map<String, String> labels = c.getLabels() == null ? Map.of() : c.getLabels();
      out.add(
          new SandboxInfo(
              c.getId(),
              "docker",
              c.getImage() == null ? "" : c.getImage(),
              runtimeOf(c.getId(), labels),
              c.getState() == null ? "unknown" : c.getState(),
              Instant.ofEpochSecond(c.getCreated() == null ? 0 : c.getCreated()),
              labels));
    }
    return out;
  }

  /**
   * The runtime from the label set at create; only sandboxes made before that label existed cost an
   * inspect each (Docker's list does not report the runtime).
   */
  private String runtimeOf(String id, Map<String, String> labels) {
    String label = labels.get(Labels.RUNTIME);
    if (label != null && !label.isBlank()) {
      return label;
    }
    try {
      String r = client.inspectContainerCmd(id).exec().getHostConfig().getRuntime();
      return r == null ? "runc" : r;
    } catch (RuntimeException e) {
      return "unknown";
    }
  }

  Optional<SandboxInfo> inspectManaged(String idOrPrefix) {
    InspectContainerResponse c;
    try {
      c = inspect(idOrPrefix);
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
   * The bulk directory of a managed sandbox, checked to be one this backend makes and closed to all
   * but the sandbox's own group.
   */
  Optional<Path> bulkDirectory(String id) {
    try {
      InspectContainerResponse c = client.inspectContainerCmd(id).exec();
      String user = c.getConfig() == null ? null : c.getConfig().getUser();
      return BulkDirs.of(c).filter(d -> user != null && BulkDirAccess.restricted(d, user));
    } catch (NotFoundException e) {
      return Optional.empty();
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }

  /**
   * A paused runsc sandbox cannot take the kill of a forced remove: Docker answers that its process
   * "is zombie and can not be killed", and the container lingers until prune. Resumed first, it
   * dies at once (runc's frozen cgroup is thawed by the kill anyway). A failure here is left to the
   * remove, which reports it.
   */
  private void unpause(String id) {
    try {
      client.unpauseContainerCmd(id).exec();
    } catch (DockerException e) {
      LOG.debug("unpausing sandbox {} before removing it: {}", id, e.toString());
    }
  }

  /** Force-removes a container (resumed first when paused); a no-op when it is already gone. */
  void remove(String id) {
    try {
      Optional<Path> dir = Optional.empty();
      try {
        InspectContainerResponse c = client.inspectContainerCmd(id).exec();
        dir = BulkDirs.of(c);
        if (c.getState() != null && Boolean.TRUE.equals(c.getState().getPaused())) {
          unpause(id);
        }
      } catch (NotFoundException e) {
        // removed below, idempotently
      }
      client.removeContainerCmd(id).withForce(true).withRemoveVolumes(true).exec();
      dir.ifPresent(BulkDirs::delete);
    } catch (NotFoundException e) {
      // already gone: destroy is idempotent
    } catch (DockerException e) {
      if (e.getHttpStatus() == 409 && String.valueOf(e.getMessage()).contains("in progress")) {
        return;
      }
      throw new AgentNestException("Docker could not remove sandbox " + id + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }
}
