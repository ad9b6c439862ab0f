package io.agentnest.microvm.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.AgentNestHome;
import io.agentnest.spi.support.DaemonThreads;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Guests checkpointed with their memory: QEMU's migration stream of the paused guest (RAM and
 * device state) into a file, and its workspace disk copied (sparse) while it is paused; the guest
 * then continues, never having stopped from its own point of view, on the same connection. A
 * restore starts QEMU with the same machine, waiting for that stream ({@code -incoming}), sends it,
 * and continues the guest on a copy of the disk.
 *
 * <p>Everything here is bounded: the stream QEMU sends may be no longer than the guest's memory
 * explains, every wait has a deadline, and what a checkpoint directory says is validated before a
 * restore uses it. QEMU reaches the host's socket only through its working directory (see {@link
 * VmDirectory#migrationDir()}).
 */
final class GuestCheckpoints {
  static final String VMSTATE = "vmstate";
  static final String DISK = "workspace.img";
  static final String META = "checkpoint.json";
  private static final Logger LOG = LoggerFactory.getLogger(GuestCheckpoints.class);
  static final int FORMAT = 1;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final ExecutorService RESTORES = DaemonThreads.pool("agentnest-vm-restore");
  private static final Duration MIGRATION_TIMEOUT = Duration.ofSeconds(120);
  private static final long MAX_META_BYTES = 64 * 1024;
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration CONTROL_TIMEOUT_TCG = Duration.ofSeconds(15);
  static final int CONTROL_ATTEMPTS = 3;

  /** Said once per process: every guest of such an image has the same problem. */
  private static final AtomicBoolean OLD_IMAGE_WARNED = new AtomicBoolean();

  private static final Duration RESUME_TIMEOUT = Duration.ofSeconds(10);

  /**
   * What a checkpoint was taken from: the machine a restore must start again (the same image,
   * accelerator, memory, vCPUs and kernel arguments), and the sizes of its files.
   */
  record Meta(
      int format,
      String image,
      String imageId,
      String accel,
      long memoryMiB,
      int vcpus,
      String kernelArgs,
      boolean workspace,
      long workspaceBytes,
      long vmstateBytes) {}

  private final Guests guests;

  GuestCheckpoints(Guests guests) {
    this.guests = guests;
  }

  /**
   * Writes the checkpoint of running guest {@code vm} into {@code dir}: false, with nothing done,
   * for a guest made by a version that did not record what a restore must match.
   */
  boolean checkpoint(VmDirectory vm, Path dir) {
    VmDirectory.VmRecord r = vm.read().orElse(null);
    if (r == null
        || r.imageId() == null
        || r.kernelArgs() == null
        || !Files.isDirectory(vm.migrationDir())
        || !vm.running()) {
      return false;
    }
    long deadline = System.nanoTime() + MIGRATION_TIMEOUT.toNanos();
    Path socket = vm.migrationDir().resolve("o-" + hex(4) + ".sock");
    try {
      Files.createDirectories(dir);
      Path state = dir.resolve(VMSTATE);
      long stateBytes;
      long diskBytes = 0;
      boolean workspace = Files.exists(vm.workspaceDisk());
      try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
          Qmp.Session q = Qmp.Session.open(vm.qmpSocket(), deadline)) {
        server.bind(UnixDomainSocketAddress.of(socket));
        // Reachable only through QEMU's working directory (the guest directory is owner-only).
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw-rw-"));
        q.run("stop", Map.of(), deadline);
        boolean migrating = false;
        try {
          q.run("migrate", Map.of("uri", "unix:" + socket.getFileName()), deadline);
          migrating = true;
          try (SocketChannel in = MigrationStream.accept(server, deadline)) {
            stateBytes =
                MigrationStream.receive(in, state, MigrationStream.bound(r.memoryMiB()), deadline);
          }
          awaitMigration(q, "the checkpoint", deadline);
          migrating = false;
          if (workspace) {
            // Flushed by the migration's end; the guest writes nothing until it continues.
            diskBytes =
                HostFiles.copySparse(
                    vm.workspaceDisk(), dir.resolve(DISK), Files.size(vm.workspaceDisk()));
          }
        } finally {
          // A deadline of its own: a checkpoint that ran out of time must still let the guest go.
          long after = System.nanoTime() + RESUME_TIMEOUT.toNanos();
          if (migrating) {
            cancel(q, after);
          }
          try {
            q.run("cont", Map.of(), after);
          } catch (IOException e) {
            throw new AgentNestException(
                "microVM sandbox "
                    + vm.id()
                    + " could not be continued after its checkpoint ("
                    + e.getMessage()
                    + ") and is paused: destroy it",
                e);
          }
          tellResumed(vm, GuestImage.of(r.image()).hasControlPort(), r.accel());
        }
      }
      Meta m =
          new Meta(
              FORMAT,
              r.image(),
              r.imageId(),
              r.accel(),
              r.memoryMiB(),
              r.vcpus(),
              r.kernelArgs(),
              workspace,
              diskBytes,
              stateBytes);
      Files.write(dir.resolve(META), JSON.writeValueAsBytes(m));
      return true;
    } catch (IOException e) {
      throw new AgentNestException(
          "checkpoint of microVM sandbox "
              + vm.id()
              + " failed: "
              + e.getMessage()
              + "; the guest runs on unchanged (QEMU said: "
              + vm.errors()
              + "; the console said: "
              + Qmp.consoleTail(vm.qmpSocket(), 1024).strip()
              + ")",
          e);
    } finally {
      try {
        Files.deleteIfExists(socket);
      } catch (IOException ignored) {
        // the guest directory goes with the guest
      }
    }
  }

  /** Waits until QEMU says the migration completed; throws with its reason when it failed. */
  private static void awaitMigration(Qmp.Session q, String what, long deadline) throws IOException {
    while (System.nanoTime() < deadline) {
      String status = q.run("query-migrate", Map.of(), deadline).path("status").asText("");
      switch (status) {
        case "completed":
          return;
        case "failed", "cancelled":
          {
            String desc = q.run("query-migrate", Map.of(), deadline).path("error-desc").asText("");
            throw new IOException(
                what
                    + " "
                    + status
                    + (desc.isEmpty()
                        ? ""
                        : ": " + (desc.length() > 300 ? desc.substring(0, 300) : desc)));
          }
        default:
          sleep(20);
      }
    }
    throw new IOException(
        what + " did not complete within " + MIGRATION_TIMEOUT.toSeconds() + " s");
  }

  /** Cancels a migration in flight so the guest may continue; bounded, best effort. */
  private static void cancel(Qmp.Session q, long deadline) {
    try {
      q.run("migrate_cancel", Map.of(), deadline);
      for (int i = 0; i < 250; i++) {
        String s = q.run("query-migrate", Map.of(), deadline).path("status").asText("");
        if (!s.equals("active") && !s.equals("cancelling") && !s.equals("setup")) {
          return;
        }
        sleep(20);
      }
    } catch (IOException e) {
      // cont below says whether the guest runs on
    }
  }

  /**
   * A new guest from the checkpoint in {@code dir}, made for {@code spec}: the same machine as the
   * checkpointed one (else refused), its memory from the migration stream, its workspace from the
   * copied disk. Its agent runs already, with the memory it had.
   */
  BackendSandbox restore(SandboxSpec spec, Path dir) {
    Guests.check(spec);
    Meta m = readMeta(dir);
    GuestImage image = GuestImage.of(spec.image()).require();
    String imageId = image.id().orElse("");
    if (!imageId.equals(m.imageId())) {
      throw new SnapshotException(
          SnapshotException.Reason.IMAGE_CHANGED,
          "the microVM checkpoint was taken from image "
              + m.image()
              + " ("
              + m.imageId()
              + "), not from '"
              + GuestImage.normalise(spec.image())
              + "' as it is now ("
              + (imageId.isEmpty() ? "not built" : imageId)
              + "): a guest's memory restores only into the kernel and root disk it ran on;"
              + " restore with that image, or without the memory");
    }
    Path qemu = QemuLauncher.require(guests.settings().qemu());
    Accelerator.Choice accel = Accelerator.resolve(guests.settings(), qemu, image);
    QemuLauncher.Machine machine = Guests.machine(spec, accel);
    if (!accel.accel().equals(m.accel())
        || machine.memoryMiB() != m.memoryMiB()
        || machine.vcpus() != m.vcpus()) {
      throw new AgentNestException(
          "the microVM checkpoint is of a guest with "
              + m.memoryMiB()
              + " MiB, "
              + m.vcpus()
              + " vCPUs on "
              + m.accel()
              + "; this sandbox would get "
              + machine.memoryMiB()
              + " MiB, "
              + machine.vcpus()
              + " vCPUs on "
              + accel.accel()
              + ": a guest's memory restores only into the same machine (same memory and cpus"
              + " in the config, same accelerator)");
    }
    Long workspace = spec.tmpfs().get(SandboxConfig.WORKSPACE);
    if (m.workspace() != (workspace != null)
        || (workspace != null && workspace != m.workspaceBytes())) {
      throw new AgentNestException(
          "the microVM checkpoint's workspace disk ("
              + (m.workspace() ? m.workspaceBytes() + " bytes" : "none")
              + ") differs from this sandbox's workspace size: restore with the saved config");
    }
    Path state = regularFile(dir.resolve(VMSTATE), MigrationStream.bound(m.memoryMiB()));
    Path disk = m.workspace() ? regularFile(dir.resolve(DISK), m.workspaceBytes()) : null;
    String id = Guests.newId();
    VmDirectory vm = VmDirectory.create(id);
    try {
      if (disk != null) {
        HostFiles.copySparse(disk, vm.workspaceDisk(), m.workspaceBytes());
        VmDirectory.giveToQemu(vm.workspaceDisk());
      }
      vm.write(Guests.record(id, spec, accel, machine, imageId, m.kernelArgs()));
      QemuLauncher.start(QemuLauncher.command(qemu, image, vm, machine, m.kernelArgs(), true), vm);
      long deadline = System.nanoTime() + MIGRATION_TIMEOUT.toNanos();
      try (SocketChannel out = DeadlineLines.connect(vm.incomingSocket(), deadline)) {
        MigrationStream.send(state, out, deadline);
      }
      SocketChannel agent = null;
      try (Qmp.Session q = Qmp.Session.open(vm.qmpSocket(), deadline)) {
        awaitIncoming(q, deadline);
        // Connected before the guest continues: the init's relay finds its host there at once.
        agent = DeadlineLines.connect(vm.agentSocket(), deadline);
        q.run("cont", Map.of(), deadline);
        tellResumed(vm, image.hasControlPort(), accel.accel());
        return Guests.connection(vm, agent, new byte[0]);
      } catch (IOException | RuntimeException e) {
        if (agent != null) {
          agent.close();
        }
        throw e;
      }
    } catch (IOException | RuntimeException e) {
      String why =
          e.getMessage()
              + "; QEMU said: "
              + vm.errors()
              + "; the console said: "
              + Qmp.consoleTail(vm.qmpSocket(), 1024).strip();
      guests.destroy(id);
      if (e instanceof SnapshotException se) {
        throw se;
      }
      throw new AgentNestException("cannot start a microVM sandbox from the checkpoint: " + why, e);
    }
  }

  /**
   * Tells the running guest's init the host's time and gives it a fresh seed: a guest that was
   * paused, or is a copy, runs on with the clock and the random generator's state it had (see
   * vminit.py's Control). Waits (bounded) for the init's answer, so the clock is right and the
   * generator reseeded before anything else reaches the guest; QEMU drops what a host sends and
   * hangs up on before the guest reads it. An image built before the control port has no reader:
   * nothing is sent, and its guests keep their clock.
   */
  static void tellResumed(VmDirectory vm, boolean controlPort, String accel) {
    if (!controlPort && OLD_IMAGE_WARNED.compareAndSet(false, true)) {
      LOG.warn(
          "microVM sandbox {} runs an image built before the guest init's control port: after a"
              + " restore or a fork its clock stays behind by the pause and copies share their"
              + " random state; rebuild it with 'agentnest image build --microvm'",
          vm.id());
    }
    if (controlPort
        && !tellResumed(
            vm.controlSocket(), accel.equals("kvm") ? CONTROL_TIMEOUT : CONTROL_TIMEOUT_TCG)) {
      LOG.warn(
          "microVM sandbox {}: its init did not take the host's time and a fresh seed in {}"
              + " tries; it runs on with the clock and random state it had when paused (the host's"
              + " expiry does not depend on them). A host this loaded may need fewer guests.",
          vm.id(),
          CONTROL_ATTEMPTS);
    }
  }

  /**
   * Sends the control line on {@code socket} and waits {@code perTry} for the answer, up to {@link
   * #CONTROL_ATTEMPTS} times, each with the time of its own sending: under TCG on a loaded host the
   * init can take seconds to read, and a line read after the host gave up would set a stale time
   * (found as a fork's copy 2.85 s behind the host in CI). Whether an answer came.
   */
  static boolean tellResumed(Path socket, Duration perTry) {
    for (int attempt = 0; attempt < CONTROL_ATTEMPTS; attempt++) {
      long deadline = System.nanoTime() + perTry.toNanos();
      try (SocketChannel ch = DeadlineLines.connect(socket, deadline);
          DeadlineLines lines = new DeadlineLines(ch, 64)) {
        lines.write(resumedLine(Instant.now(), hex(32)));
        if (lines.readLine(deadline).isPresent()) {
          return true;
        }
        LOG.debug("control line to {} not answered in {} (try {})", socket, perTry, attempt + 1);
      } catch (IOException e) {
        LOG.debug(
            "control line to {} not answered (try {}): {}", socket, attempt + 1, e.toString());
      }
    }
    return false;
  }

  /** The control line: the host's time in ns since the epoch, and 32 random bytes in hex. */
  static String resumedLine(Instant now, String seedHex) throws IOException {
    long ns = now.getEpochSecond() * 1_000_000_000L + now.getNano();
    return JSON.writeValueAsString(Map.of("op", "resumed", "time_ns", ns, "seed", seedHex));
  }

  /** Waits until the incoming migration has been loaded (the guest is then paused). */
  private static void awaitIncoming(Qmp.Session q, long deadline) throws IOException {
    while (System.nanoTime() < deadline) {
      String status = q.run("query-status", Map.of(), deadline).path("status").asText("");
      if (!status.equals("inmigrate")) {
        awaitMigration(q, "the restore", deadline);
        return;
      }
      sleep(20);
    }
    throw new IOException(
        "the restore did not complete within " + MIGRATION_TIMEOUT.toSeconds() + " s");
  }

  /**
   * Fork with memory: checkpoints guest {@code parent} once (it continues on its own connection)
   * and starts {@code n} guests from the checkpoint, in parallel. Empty, with nothing done, when
   * the guest cannot be checkpointed.
   */
  Optional<List<BackendSandbox>> fork(VmDirectory parent, SandboxSpec spec, int n) {
    Path root = AgentNestHome.dir().resolve("microvm").resolve("checkpoints");
    Path tmp;
    try {
      Files.createDirectories(root);
      removeStale(root);
      tmp =
          Files.createTempDirectory(
              root,
              "fork-",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (IOException e) {
      throw new AgentNestException("cannot create a directory under " + root + ": " + e, e);
    }
    try {
      if (!checkpoint(parent, tmp)) {
        return Optional.empty();
      }
      List<CompletableFuture<BackendSandbox>> started = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        started.add(CompletableFuture.supplyAsync(() -> restore(spec, tmp), RESTORES));
      }
      List<BackendSandbox> out = new ArrayList<>();
      RuntimeException failed = null;
      for (CompletableFuture<BackendSandbox> f : started) {
        try {
          out.add(DaemonThreads.join(f));
        } catch (RuntimeException e) {
          failed = failed == null ? e : failed;
        }
      }
      if (failed != null) {
        for (BackendSandbox b : out) {
          b.close();
          guests.destroy(b.id());
        }
        throw failed;
      }
      return Optional.of(out);
    } finally {
      try {
        HostFiles.deleteTree(tmp);
      } catch (IOException e) {
        // under AGENTNEST_HOME: 'agentnest prune' finds nothing else there, the next fork neither
      }
    }
  }

  /**
   * Removes fork checkpoints a crashed process left (a fork's own lives for seconds, bounded by the
   * migration deadlines); at most 64 per call.
   */
  private static void removeStale(Path root) {
    long cutoff = System.currentTimeMillis() - Duration.ofHours(1).toMillis();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(root, "fork-*")) {
      int n = 0;
      for (Path p : s) {
        if (n++ >= 64) {
          return;
        }
        if (Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toMillis() < cutoff) {
          HostFiles.deleteTree(p);
        }
      }
    } catch (IOException e) {
      // best effort: the next fork tries again
    }
  }

  static Meta readMeta(Path dir) {
    Path f = dir.resolve(META);
    if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
      throw new AgentNestException(
          "not a microVM checkpoint (no " + META + "): it restores on the backend that wrote it");
    }
    Meta m;
    try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
      byte[] b = in.readNBytes((int) MAX_META_BYTES + 1);
      if (b.length > MAX_META_BYTES) {
        throw new AgentNestException("the microVM checkpoint's " + META + " is too long");
      }
      m = JSON.readValue(b, Meta.class);
    } catch (IOException e) {
      throw new AgentNestException("the microVM checkpoint's " + META + " is unreadable: " + e, e);
    }
    if (m.format() != FORMAT
        || m.image() == null
        || m.imageId() == null
        || m.accel() == null
        || !(m.accel().equals("tcg") || m.accel().equals("kvm"))
        || m.memoryMiB() < 64
        || m.memoryMiB() > (1L << 20)
        || m.vcpus() < 1
        || m.vcpus() > 1024
        || m.kernelArgs() == null
        || m.kernelArgs().length() > 2048
        || !m.kernelArgs().matches("[A-Za-z0-9 =._,:/-]*")
        || m.workspaceBytes() < 0) {
      throw new AgentNestException(
          "the microVM checkpoint's " + META + " is not one this version writes");
    }
    return m;
  }

  /** {@code f} when it is a regular file of at most {@code max} bytes; else refused. */
  private static Path regularFile(Path f, long max) {
    try {
      if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS) || Files.size(f) > max) {
        throw new AgentNestException(
            "the microVM checkpoint's " + f.getFileName() + " is missing or too large");
      }
    } catch (IOException e) {
      throw new AgentNestException("cannot read " + f + ": " + e.getMessage(), e);
    }
    return f;
  }

  private static String hex(int bytes) {
    byte[] b = new byte[bytes];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  private static void sleep(long ms) throws IOException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }
}
