package io.agentnest.microvm.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import io.agentnest.SandboxInfo;
import io.agentnest.spi.support.AgentNestHome;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * One guest's state on the host, {@code AGENTNEST_HOME/microvm/vms/<id>}: what it was made from
 * ({@code vm.json}), QEMU's pid, the agent's and the monitor's sockets and the workspace disk. The
 * guest outlives the process that made it (QEMU runs daemonized), so list, attach and destroy work
 * from any process, as with containers.
 */
public final class VmDirectory {
  /** Unix socket paths are limited to 107 bytes; the longest one we make must fit. */
  private static final int MAX_SOCKET_PATH = 100;

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * What {@code vm.json} holds. {@code imageId} and {@code kernelArgs} (what a checkpoint must
   * match) are null for a guest made by a version that did not record them: it is not checkpointed.
   */
  public record VmRecord(
      String id,
      String image,
      Map<String, String> labels,
      long createdEpochMs,
      String accel,
      long memoryMiB,
      int vcpus,
      @Nullable String imageId,
      @Nullable String kernelArgs) {
    public VmRecord {
      labels = Map.copyOf(labels);
    }
  }

  private final Path dir;

  private VmDirectory(Path dir) {
    this.dir = dir;
  }

  public static Path root() {
    return AgentNestHome.dir().resolve("microvm").resolve("vms");
  }

  /** The directory of guest {@code id}; the id is checked so no path can leave the root. */
  public static VmDirectory of(String id) {
    if (!id.matches("[a-f0-9]{8,64}")) {
      throw new IllegalArgumentException("'" + id + "' is not a microVM sandbox id");
    }
    return new VmDirectory(root().resolve(id));
  }

  /** Makes the directory of a new guest (owner-only: it holds the guest's sockets). */
  public static VmDirectory create(String id) {
    VmDirectory d = of(id);
    if (d.agentSocket().toString().length() > MAX_SOCKET_PATH) {
      throw new AgentNestException(
          "the microVM state directory "
              + d.dir
              + " is too deep for a Unix socket path (at most "
              + MAX_SOCKET_PATH
              + " bytes): point AGENTNEST_HOME at a shorter directory");
    }
    try {
      Files.createDirectories(root());
      Files.createDirectory(
          d.dir,
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      // QEMU's working directory: it may drop to nobody, and reaches its migration socket here by
      // a relative path; the owner-only directory above keeps every other process out.
      Files.createDirectory(d.migrationDir());
      Files.setPosixFilePermissions(d.migrationDir(), PosixFilePermissions.fromString("rwx--x--x"));
    } catch (IOException e) {
      throw new AgentNestException("cannot create " + d.dir + ": " + e.getMessage(), e);
    }
    return d;
  }

  /** Every guest directory with a readable record. */
  public static List<VmDirectory> all() {
    List<VmDirectory> out = new ArrayList<>();
    if (!Files.isDirectory(root())) {
      return out;
    }
    try (DirectoryStream<Path> s = Files.newDirectoryStream(root())) {
      for (Path p : s) {
        String name = p.getFileName().toString();
        if (name.matches("[a-f0-9]{8,64}") && Files.isRegularFile(p.resolve("vm.json"))) {
          out.add(new VmDirectory(p));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.sort(Comparator.comparing(d -> d.dir));
    return out;
  }

  public Path dir() {
    return dir;
  }

  public String id() {
    return dir.getFileName().toString();
  }

  public Path agentSocket() {
    return dir.resolve("agent.sock");
  }

  /** The guest init's control port (host to guest only: the time and a seed after a restore). */
  public Path controlSocket() {
    return dir.resolve("ctl.sock");
  }

  public Path qmpSocket() {
    return dir.resolve("qmp.sock");
  }

  /**
   * QEMU's working directory, where the host listens for the guest's outgoing migration stream
   * (QEMU connects by a relative path: once it runs as nobody it cannot pass the owner-only guest
   * directory by its full path, and neither can any other process of nobody's).
   */
  public Path migrationDir() {
    return dir.resolve("m");
  }

  /** Where QEMU, started to restore a checkpoint, listens for the migration stream. */
  public Path incomingSocket() {
    return dir.resolve("in.sock");
  }

  public Path pidFile() {
    return dir.resolve("qemu.pid");
  }

  /** QEMU's own stderr (its warnings and start-up errors; the guest's console is not here). */
  public Path errorFile() {
    return dir.resolve("qemu.err");
  }

  /** The start of QEMU's error output, bounded. */
  public String errors() {
    try (InputStream in = Files.newInputStream(errorFile())) {
      return new String(in.readNBytes(4096), StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      return "";
    }
  }

  /**
   * The workspace disk, in QEMU's working directory and QEMU's own: a checkpoint's migration
   * reopens it (read-only while the guest's state is sent, read-write when it continues), by its
   * path, after QEMU dropped to nobody.
   */
  public Path workspaceDisk() {
    return migrationDir().resolve(WORKSPACE_DISK);
  }

  /** The workspace disk's name, relative to QEMU's working directory. */
  static final String WORKSPACE_DISK = "workspace.img";

  /**
   * Gives {@code file} to the user QEMU runs as (nobody when this process is root), readable and
   * writable by it only.
   */
  static void giveToQemu(Path file) throws IOException {
    if (QemuLauncher.runsAsNobody()) {
      UserPrincipalLookupService users = file.getFileSystem().getUserPrincipalLookupService();
      Files.setOwner(file, users.lookupPrincipalByName("nobody"));
    }
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
  }

  public boolean exists() {
    return Files.isRegularFile(dir.resolve("vm.json"));
  }

  public void write(VmRecord r) {
    try {
      Path tmp = dir.resolve("vm.json.tmp");
      Files.write(tmp, JSON.writeValueAsBytes(r));
      Files.move(tmp, dir.resolve("vm.json"), StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new AgentNestException("cannot write " + dir.resolve("vm.json") + ": " + e, e);
    }
  }

  public Optional<VmRecord> read() {
    try {
      return Optional.of(JSON.readValue(dir.resolve("vm.json").toFile(), VmRecord.class));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** QEMU's pid, if it wrote one. */
  public OptionalLong pid() {
    try {
      String s = Files.readString(pidFile(), StandardCharsets.US_ASCII).strip();
      return s.matches("[0-9]{1,10}") ? OptionalLong.of(Long.parseLong(s)) : OptionalLong.empty();
    } catch (IOException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * QEMU's process while it runs this guest: the pid is checked against the process's command line,
   * so a pid reused by another program after the guest ended is never taken for it.
   */
  public Optional<ProcessHandle> process() {
    OptionalLong pid = pid();
    if (pid.isEmpty()) {
      return Optional.empty();
    }
    Optional<ProcessHandle> h = ProcessHandle.of(pid.getAsLong()).filter(ProcessHandle::isAlive);
    if (h.isEmpty()) {
      return h;
    }
    try {
      byte[] cmdline =
          Files.readAllBytes(Path.of("/proc", Long.toString(pid.getAsLong()), "cmdline"));
      String text = new String(cmdline, StandardCharsets.UTF_8);
      return text.contains(agentSocket().toString()) ? h : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  public boolean running() {
    return process().isPresent();
  }

  public SandboxInfo info(VmRecord r) {
    return new SandboxInfo(
        r.id(),
        "microvm",
        r.image(),
        "microvm",
        running() ? "running" : "exited",
        Instant.ofEpochMilli(r.createdEpochMs()),
        r.labels());
  }

  /** Bytes the directory holds on disk (the workspace disk's allocated blocks, mostly). */
  public long sizeBytes() {
    try (Stream<Path> files = Files.walk(dir)) {
      return files
          .filter(Files::isRegularFile)
          .mapToLong(
              p -> {
                try {
                  // The apparent size: a sparse workspace disk counts in full (an upper bound).
                  return Files.size(p);
                } catch (IOException | RuntimeException e) {
                  return 0;
                }
              })
          .sum();
    } catch (IOException e) {
      return -1;
    }
  }

  /** Deletes the directory and everything in it; a no-op when it is gone. */
  public void delete() {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new AgentNestException("cannot remove " + dir + ": " + e.getMessage(), e);
    }
  }
}
