package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import io.agentnest.AgentNestException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.DaemonThreads;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * gVisor checkpoints: fork with process memory, snapshot memory, and restore from a saved image.
 * runsc stops a sandbox it checkpoints (it cannot leave it running here), so every path restores
 * the parent from its own checkpoint at once; the image is placed in each container's checkpoint
 * directory by hard links (a restore only reads it). Needs the engine's root directory on this host
 * (a local daemon run as root); otherwise each entry point declines with nothing done.
 */
final class DockerCheckpoints {
  private static final ExecutorService RESTORES = DaemonThreads.pool("agentnest-restore");

  /** containerd unpacks each start's image under its temporary directory, /tmp on Debian. */
  private static final ContainerdLeftovers LEFTOVERS = new ContainerdLeftovers(Path.of("/tmp"));

  private final DockerClient client;
  private final DockerRuntimes runtimes;
  private final DockerContainers containers;
  private final EngineHttp http;

  DockerCheckpoints(
      DockerClient client, DockerRuntimes runtimes, DockerContainers containers, EngineHttp http) {
    this.client = client;
    this.runtimes = runtimes;
    this.containers = containers;
    this.http = http;
  }

  /**
   * Fork with process memory (gVisor): the parent is checkpointed, restored from its own checkpoint
   * at once, and the checkpoint is linked into each new container's checkpoint directory and
   * restored there. Empty, with nothing done, where checkpoints are not possible.
   */
  Optional<List<BackendSandbox>> fork(
      String parentId,
      SandboxSpec spec,
      int n,
      Runnable beforeCheckpoint,
      Consumer<BackendSandbox> parentRestored) {
    Optional<Checkpointable> target = checkpointable(parentId);
    if (target.isEmpty()) {
      return Optional.empty();
    }
    Checkpointable parent = target.get();
    String name = "agentnest-fork-" + Long.toHexString(System.nanoTime());
    List<String> kids = new ArrayList<>();
    List<BackendSandbox> attached = new ArrayList<>();
    boolean parentStopped = false;
    Path image = null;
    try {
      // Children are created (not started) first: the parent is stopped for as short as can be.
      for (int i = 0; i < n; i++) {
        kids.add(containers.createStopped(spec));
      }
      beforeCheckpoint.run();
      parentStopped = true;
      checkpoint(parent.id(), name);
      image = parent.dir().resolve("checkpoints").resolve(name);
      // The parent and every copy restore the same image at once (runsc only reads it).
      Path shared = image;
      CompletableFuture<BackendSandbox> back =
          CompletableFuture.supplyAsync(() -> restore(parent.root(), parent.id(), name), RESTORES);
      List<CompletableFuture<BackendSandbox>> copies = new ArrayList<>();
      for (String kid : kids) {
        copies.add(
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return startFromImage(parent.root(), kid, name, shared);
                  } catch (IOException e) {
                    throw new AgentNestException(
                        "cannot place the checkpoint image: " + e.getMessage(), e);
                  }
                },
                RESTORES));
      }
      RuntimeException failed = null;
      try {
        parentRestored.accept(DaemonThreads.join(back));
        parentStopped = false;
      } catch (RuntimeException e) {
        failed = e;
      }
      for (CompletableFuture<BackendSandbox> c : copies) {
        try {
          attached.add(DaemonThreads.join(c));
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
      kids.forEach(containers::remove);
      throw failed("fork with checkpoint of sandbox " + parentId, e, parentStopped);
    } finally {
      deleteQuietly(image);
    }
  }

  /**
   * Checkpoints sandbox {@code id} (gVisor), restores it in place at once and moves the checkpoint
   * image's files to {@code dir}. False, with nothing done, when the sandbox does not run on runsc
   * or the engine's root directory is not writable here.
   */
  boolean checkpointTo(
      String id, Path dir, Runnable beforeCheckpoint, Consumer<BackendSandbox> restored) {
    Optional<Checkpointable> target = checkpointable(id);
    if (target.isEmpty()) {
      return false;
    }
    String name = "agentnest-snapshot-" + Long.toHexString(System.nanoTime());
    boolean stopped = false;
    Path image = null;
    try {
      beforeCheckpoint.run();
      stopped = true;
      image = checkpointInPlace(target.get(), name, restored);
      stopped = false;
      linkTree(image, dir);
      return true;
    } catch (RuntimeException | IOException e) {
      throw failed("checkpoint of sandbox " + id, e, stopped);
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
  Optional<BackendSandbox> createFrom(SandboxSpec spec, Path dir) {
    String runtime = runtimes.resolve(spec.runtime());
    Optional<Path> root = writableRoot();
    if (!DockerRuntimes.isGvisor(runtime) || root.isEmpty()) {
      return Optional.empty();
    }
    String id = containers.createStopped(spec);
    try {
      return Optional.of(
          startFromImage(
              root.get(), id, "agentnest-restore-" + Long.toHexString(System.nanoTime()), dir));
    } catch (RuntimeException | IOException e) {
      containers.remove(id);
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
  private record Checkpointable(String id, Path root, Path dir) {}

  private Optional<Checkpointable> checkpointable(String idOrPrefix) {
    InspectContainerResponse c = containers.inspect(idOrPrefix);
    String runtime = c.getHostConfig() == null ? null : c.getHostConfig().getRuntime();
    if (!DockerRuntimes.isGvisor(runtime)) {
      return Optional.empty();
    }
    Optional<Path> root = writableRoot();
    if (root.isEmpty()) {
      return Optional.empty();
    }
    Path dir = root.get().resolve("containers").resolve(c.getId());
    if (!Files.isWritable(dir)) {
      return Optional.empty();
    }
    return Optional.of(new Checkpointable(c.getId(), root.get(), dir));
  }

  /** The engine's root directory, when its containers live on this host and are writable. */
  private Optional<Path> writableRoot() {
    Path root;
    try {
      root = Path.of(client.infoCmd().exec().getDockerRootDir());
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    return Files.isWritable(root.resolve("containers")) ? Optional.of(root) : Optional.empty();
  }

  /** Stops the container into checkpoint {@code name}; runsc cannot leave it running. */
  private void checkpoint(String id, String name) {
    http.call(
        "POST",
        "/containers/" + id + "/checkpoints",
        "{\"CheckpointID\":\"" + name + "\",\"Exit\":true}");
  }

  /**
   * Stops the sandbox into checkpoint {@code name} and starts it again from it at once; returns the
   * checkpoint image's directory, which the caller removes.
   */
  private Path checkpointInPlace(Checkpointable c, String name, Consumer<BackendSandbox> restored) {
    checkpoint(c.id(), name);
    restored.accept(restore(c.root(), c.id(), name));
    return c.dir().resolve("checkpoints").resolve(name);
  }

  /** Starts created container {@code id} from the checkpoint image in {@code image}. */
  private BackendSandbox startFromImage(Path root, String id, String name, Path image)
      throws IOException {
    Path dir = root.resolve("containers").resolve(id).resolve("checkpoints").resolve(name);
    linkTree(image, dir);
    try {
      return restore(root, id, name);
    } finally {
      deleteQuietly(dir);
    }
  }

  private static AgentNestException failed(String what, Exception e, boolean stopped) {
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

  private static void deleteQuietly(@Nullable Path dir) {
    if (dir == null) {
      return;
    }
    try {
      HostFiles.deleteTree(dir);
    } catch (IOException e) {
      // the engine removes a container's checkpoints with the container
    }
  }

  /** Starts container {@code id} of engine root {@code root} from its checkpoint {@code name}. */
  private BackendSandbox restore(Path root, String id, String checkpoint) {
    Set<String> leftovers = LEFTOVERS.enter();
    try {
      return startFromCheckpoint(id, checkpoint);
    } finally {
      LEFTOVERS.exit(
          leftovers,
          root.resolve("containers").resolve(id).resolve("checkpoints").resolve(checkpoint));
    }
  }

  private BackendSandbox startFromCheckpoint(String id, String checkpoint) {
    BackendSandbox att = containers.openAttachment(id);
    try {
      // The engine answers the checkpoint before runsc has released the stopped sandbox's id;
      // a start until then is refused with "id already in use". A start right after a
      // checkpoint can also lose dockerd's race uploading the checkpoint to containerd
      // ("failed to upload checkpoint ... already exists", moby/moby#42900); a retry a moment
      // later succeeds. Bounded: about 10 s.
      for (int attempt = 0; ; attempt++) {
        try {
          http.call(
              "POST",
              "/containers/" + id + "/start?checkpoint=" + EngineHttp.enc(checkpoint),
              null);
          break;
        } catch (AgentNestException e) {
          if (startedAfterAll(id, String.valueOf(e.getMessage()))) {
            break;
          }
          if (attempt >= 20 || !isTransientStartRefusal(String.valueOf(e.getMessage()))) {
            throw e;
          }
          if (attempt == 5) {
            clearStaleRunscState(id);
          }
          sleepQuietly(100);
          // A refused start ends the streams of the attachment made for it.
          att.close();
          att = containers.openAttachment(id);
        }
      }
      return att;
    } catch (RuntimeException e) {
      att.close();
      throw e;
    }
  }

  /**
   * Under load an earlier attempt can be answered with a refusal although the engine went on to
   * start the container from the checkpoint; the next attempt then gets "304 Not Modified" (already
   * started). Only this code starts a container it has just created, so a running one is ours.
   */
  private boolean startedAfterAll(String id, String message) {
    if (!message.contains("(HTTP 304)")) {
      return false;
    }
    Boolean running = containers.inspect(id).getState().getRunning();
    return Boolean.TRUE.equals(running);
  }

  /** The two refusals a start from a fresh checkpoint gets while the engine catches up. */
  static boolean isTransientStartRefusal(String message) {
    return message.contains("already in use")
        || (message.contains("failed to upload checkpoint") && message.contains("already exists"));
  }

  /**
   * runsc (2022-12, Debian 12) leaves a sandbox that was itself restored from a checkpoint paused
   * after its next checkpoint, with its state file in place, so the engine cannot start the
   * container again ("id already in use"). Deleting that state with runsc itself frees the id.
   */
  private static void clearStaleRunscState(String id) {
    Path run = Path.of("/run/docker");
    String state = id + "_sandbox:" + id + ".state";
    try (Stream<Path> roots = Files.list(run)) {
      for (Path r : (Iterable<Path>) roots::iterator) {
        Path root = r.resolve("moby");
        if (r.getFileName().toString().startsWith("runtime-")
            && Files.exists(root.resolve(state))) {
          Process p =
              new ProcessBuilder("runsc", "--root", root.toString(), "delete", "--force", id)
                  .redirectErrorStream(true)
                  .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                  .start();
          if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
          }
        }
      }
    } catch (IOException e) {
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
  static void linkTree(Path from, Path to) throws IOException {
    Files.createDirectories(to);
    try (Stream<Path> files = Files.list(from)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Path t = to.resolve(f.getFileName().toString());
        if (Files.isDirectory(f, LinkOption.NOFOLLOW_LINKS)) {
          linkTree(f, t);
        } else if (Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
          try {
            Files.createLink(t, f);
          } catch (IOException | UnsupportedOperationException e) {
            Files.copy(f, t);
          }
        }
      }
    }
  }
}
