package io.agentnest.microvm.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.SocketConnection;
import io.agentnest.spi.support.StartTrace;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Makes, finds and ends guests: the work behind {@link io.agentnest.microvm.MicrovmBackend}.
 *
 * <p>Creating one: the spec is checked (every hardening control on; the root is always read-only),
 * a workspace disk of the workspace's size is formatted, QEMU starts daemonized, and the host waits
 * (bounded by the boot timeout) for the guest init's READY line, sends it the command, user and
 * limits as one JSON line and waits for SPAWNED; from then on the connection is the agent's.
 */
public final class Guests {
  /** The label saying which accelerator ran a guest. */
  public static final String ACCEL_LABEL = "agentnest.microvm.accel";

  private static final String READY = "AGENTNEST-VM-READY 1";
  private static final String SPAWNED = "AGENTNEST-VM-SPAWNED";
  private static final int MAX_GUEST_LINE = 4096;
  private static final int CONSOLE_TAIL = 4096;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

  private final MicrovmSettings settings;

  public Guests(MicrovmSettings settings) {
    this.settings = settings;
  }

  public BackendSandbox create(SandboxSpec spec) {
    check(spec);
    GuestImage image = GuestImage.of(spec.image()).require();
    Path qemu = QemuLauncher.require(settings.qemu());
    Accelerator.Choice accel = Accelerator.resolve(settings, qemu, image);
    StartTrace.mark("image and accelerator");
    String id = newId();
    VmDirectory vm = VmDirectory.create(id);
    try {
      int[] ids = userIds(spec.user());
      Long workspace = spec.tmpfs().get(SandboxConfig.WORKSPACE);
      if (workspace != null) {
        formatWorkspace(vm.workspaceDisk(), workspace, ids);
        StartTrace.mark("workspace disk");
      }
      QemuLauncher.Machine machine = machine(spec, accel);
      String kernelArgs = QemuLauncher.kernelArguments(machine);
      vm.write(record(id, spec, accel, machine, image.id().orElse(null), kernelArgs));
      QemuLauncher.start(QemuLauncher.command(qemu, image, vm, machine, kernelArgs, false), vm);
      StartTrace.mark("qemu started");
      return handshake(
          vm,
          guestSpec(spec, id, ids, workspace != null),
          settings.bootTimeout(accel.accel()),
          accel);
    } catch (RuntimeException e) {
      destroy(id);
      throw e;
    }
  }

  /** The machine a guest of {@code spec} gets: its memory limit plus overhead, whole vCPUs. */
  static QemuLauncher.Machine machine(SandboxSpec spec, Accelerator.Choice accel) {
    long memoryMiB =
        Math.max(64, (spec.memoryBytes() + (1 << 20) - 1) >> 20) + QemuLauncher.OVERHEAD_MIB;
    int vcpus =
        (int)
            Math.max(
                1, Math.min(Runtime.getRuntime().availableProcessors(), Math.ceil(spec.cpus())));
    return new QemuLauncher.Machine(accel.accel(), memoryMiB, vcpus, "");
  }

  static VmDirectory.VmRecord record(
      String id,
      SandboxSpec spec,
      Accelerator.Choice accel,
      QemuLauncher.Machine machine,
      @Nullable String imageId,
      String kernelArgs) {
    Map<String, String> labels = new TreeMap<>(spec.labels());
    labels.put(ACCEL_LABEL, accel.accel());
    return new VmDirectory.VmRecord(
        id,
        GuestImage.normalise(spec.image()),
        labels,
        System.currentTimeMillis(),
        accel.accel(),
        machine.memoryMiB(),
        machine.vcpus(),
        imageId,
        kernelArgs);
  }

  /** A new guest id: 64 random bits in hex. */
  static String newId() {
    return HexFormat.of().formatHex(random());
  }

  MicrovmSettings settings() {
    return settings;
  }

  /** 64 random bits: unique on a host, and short enough for the socket paths under the id. */
  private static byte[] random() {
    byte[] b = new byte[8];
    RANDOM.nextBytes(b);
    return b;
  }

  static void check(SandboxSpec spec) {
    spec.refuseGpus("microvm");
    spec.requireHardened("microvm");
    String runtime = spec.runtime();
    if (runtime != null && !runtime.equals("microvm") && !runtime.equals("qemu")) {
      if (runtime.equals("firecracker")) {
        throw new UnsupportedControlException(
            "runtime 'firecracker' is not available in this version of the microvm backend: use"
                + " runtime 'microvm' (QEMU's microvm machine, with KVM where the host has it)");
      }
      throw new UnsupportedControlException(
          "runtime '"
              + runtime
              + "' is not one the microvm backend runs: use 'microvm' (or 'qemu'), or the docker"
              + " backend for OCI runtimes");
    }
    if (!spec.readOnlyRootFilesystem()) {
      throw new UnsupportedControlException(
          "the microvm backend always mounts the guest's root filesystem read-only: remove"
              + " readOnlyRootFilesystem(false); /tmp and /workspace are writable");
    }
  }

  private static int[] userIds(String user) {
    String[] parts = user.split(":", 2);
    try {
      int uid = Integer.parseInt(parts[0]);
      int gid = parts.length > 1 ? Integer.parseInt(parts[1]) : uid;
      return new int[] {uid, gid};
    } catch (NumberFormatException e) {
      throw new UnsupportedControlException(
          "user '"
              + user
              + "' is not numeric: the microvm backend needs uid:gid, e.g. 65534:65534");
    }
  }

  /** A sparse disk of {@code bytes}, ext4 without a journal (it is thrown away with the guest). */
  private static void formatWorkspace(Path disk, long bytes, int[] ids) {
    try (RandomAccessFile f = new RandomAccessFile(disk.toFile(), "rw")) {
      f.setLength(bytes);
    } catch (IOException e) {
      throw new AgentNestException("cannot create the workspace disk " + disk + ": " + e, e);
    }
    Path mke2fs = HostTools.require("mke2fs", "e2fsprogs");
    HostTools.run(
        List.of(
            mke2fs.toString(),
            "-q",
            "-F",
            "-t",
            "ext4",
            "-m",
            "0",
            "-O",
            "^has_journal",
            "-E",
            "root_owner=" + ids[0] + ":" + ids[1],
            "-L",
            "workspace",
            disk.toString()),
        Path.of("/"),
        Duration.ofSeconds(60),
        "");
    try {
      VmDirectory.giveToQemu(disk);
    } catch (IOException e) {
      throw new AgentNestException("cannot hand the workspace disk " + disk + " to QEMU: " + e, e);
    }
  }

  private static Map<String, Object> guestSpec(
      SandboxSpec spec, String id, int[] ids, boolean workspaceDisk) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PATH", PATH);
    env.put("LANG", "C.UTF-8");
    env.put("HOSTNAME", id.substring(0, 12));
    env.putAll(spec.env());
    Map<String, Long> tmpfs = new TreeMap<>(spec.tmpfs());
    tmpfs.remove(SandboxConfig.WORKSPACE);
    Map<String, Object> g = new LinkedHashMap<>();
    g.put("argv", spec.command());
    g.put("env", env);
    g.put("uid", ids[0]);
    g.put("gid", ids[1]);
    g.put("cwd", spec.workdir());
    g.put("tmpfs", tmpfs);
    if (workspaceDisk) {
      g.put("workspace", SandboxConfig.WORKSPACE);
    }
    g.put("memoryBytes", spec.memoryBytes());
    g.put("pidsLimit", spec.pidsLimit());
    g.put("openFilesLimit", spec.openFilesLimit());
    g.put("cpus", spec.cpus());
    g.put("hostname", id.substring(0, 12));
    return g;
  }

  private BackendSandbox handshake(
      VmDirectory vm, Map<String, Object> guestSpec, Duration boot, Accelerator.Choice accel) {
    long deadline = System.nanoTime() + boot.toNanos();
    SocketChannel ch = null;
    try {
      ch = DeadlineLines.connect(vm.agentSocket(), deadline);
      try (DeadlineLines lines = new DeadlineLines(ch, MAX_GUEST_LINE)) {
        awaitLine(lines, READY, deadline, vm, boot, accel);
        StartTrace.mark("guest kernel and init up");
        lines.write(JSON.writeValueAsString(guestSpec));
        awaitLine(lines, SPAWNED, deadline, vm, boot, accel);
        StartTrace.mark("guest mounts, limits, command spawned");
        byte[] rest = lines.rest();
        lines.detach();
        return connection(vm, ch, rest);
      }
    } catch (IOException e) {
      closeQuietly(ch);
      throw new BackendUnavailableException(
          "lost the microVM guest "
              + vm.id()
              + " while it started ("
              + e.getMessage()
              + "); QEMU said: "
              + vm.errors()
              + "; its console said: "
              + Qmp.consoleTail(vm.qmpSocket(), CONSOLE_TAIL).strip(),
          e);
    } catch (RuntimeException e) {
      closeQuietly(ch);
      throw e;
    }
  }

  /** Reads lines until {@code want}; READY lines repeat until the guest hears from the host. */
  private static void awaitLine(
      DeadlineLines lines,
      String want,
      long deadline,
      VmDirectory vm,
      Duration boot,
      Accelerator.Choice accel)
      throws IOException {
    for (int i = 0; i < 10_000; i++) {
      Optional<String> line = lines.readLine(deadline);
      if (line.isEmpty()) {
        throw new BackendUnavailableException(
            "the microVM guest did not come up within "
                + boot.toSeconds()
                + " s on "
                + accel.accel()
                + " ("
                + accel.reason()
                + "); raise "
                + MicrovmSettings.BOOT_TIMEOUT_ENV
                + " on a slow host. Its console said: "
                + Qmp.consoleTail(vm.qmpSocket(), CONSOLE_TAIL).strip());
      }
      if (line.get().equals(want)) {
        return;
      }
      if (!line.get().equals(READY)) {
        throw new IOException("unexpected line from the guest init");
      }
    }
    throw new IOException("the guest init repeated itself without starting");
  }

  static SocketConnection connection(VmDirectory vm, SocketChannel ch, byte[] leftover) {
    return new SocketConnection(
        vm.id(), ch, leftover, () -> Qmp.consoleTail(vm.qmpSocket(), CONSOLE_TAIL));
  }

  private static void closeQuietly(@Nullable SocketChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
  }

  /** See {@link io.agentnest.spi.RuntimeBackend#checkpointTo}: the guest continues at once. */
  public boolean checkpointTo(String id, Path dir) {
    return new GuestCheckpoints(this).checkpoint(running(id), dir);
  }

  /** A new guest from the checkpoint {@link #checkpointTo} wrote in {@code dir}. */
  public BackendSandbox createFromCheckpoint(SandboxSpec spec, Path dir) {
    return new GuestCheckpoints(this).restore(spec, dir);
  }

  /** {@code n} new guests from one checkpoint of guest {@code id}, which continues at once. */
  public Optional<List<BackendSandbox>> forkWithCheckpoint(String id, SandboxSpec spec, int n) {
    return new GuestCheckpoints(this).fork(running(id), spec, n);
  }

  private VmDirectory running(String id) {
    VmDirectory vm = find(id).orElseThrow(() -> notFound(id));
    if (!vm.running()) {
      throw new SandboxNotFoundException(
          "microVM sandbox " + vm.id() + " is not running: destroy it with 'agentnest rm'");
    }
    return vm;
  }

  public BackendSandbox attach(String id) {
    VmDirectory vm = find(id).orElseThrow(() -> notFound(id));
    if (!vm.running()) {
      throw new SandboxNotFoundException(
          "microVM sandbox " + vm.id() + " is not running: destroy it with 'agentnest rm'");
    }
    try {
      SocketChannel ch =
          DeadlineLines.connect(
              vm.agentSocket(), System.nanoTime() + Duration.ofSeconds(10).toNanos());
      return connection(vm, ch, new byte[0]);
    } catch (IOException e) {
      throw new BackendUnavailableException(
          "cannot connect to microVM sandbox " + vm.id() + ": " + e.getMessage(), e);
    }
  }

  private static SandboxNotFoundException notFound(String id) {
    String shown = id.length() > 80 ? id.substring(0, 80) + "..." : id;
    return new SandboxNotFoundException(
        "no microVM sandbox '" + shown + "': 'agentnest ls' lists them");
  }

  /** A guest by id or unique id prefix. */
  Optional<VmDirectory> find(String id) {
    if (!id.matches("[a-f0-9]{1,64}")) {
      return Optional.empty();
    }
    if (id.length() >= 16) {
      VmDirectory d = VmDirectory.of(id);
      return d.exists() ? Optional.of(d) : Optional.empty();
    }
    List<VmDirectory> matches = new ArrayList<>();
    for (VmDirectory d : VmDirectory.all()) {
      if (d.id().startsWith(id)) {
        matches.add(d);
      }
    }
    return matches.size() == 1 ? Optional.of(matches.get(0)) : Optional.empty();
  }

  public List<SandboxInfo> list() {
    List<SandboxInfo> out = new ArrayList<>();
    for (VmDirectory d : VmDirectory.all()) {
      d.read().ifPresent(r -> out.add(d.info(r)));
    }
    return out;
  }

  public Optional<SandboxInfo> inspect(String id) {
    return find(id).flatMap(d -> d.read().map(d::info));
  }

  public void destroy(String id) {
    Optional<VmDirectory> found = find(id);
    if (found.isEmpty()) {
      return;
    }
    VmDirectory vm = found.get();
    vm.process()
        .ifPresent(
            p -> {
              p.destroyForcibly();
              try {
                p.onExit().get(10, TimeUnit.SECONDS);
              } catch (Exception e) { // NOPMD - a timeout or interrupt leaves the kill in flight
                if (e instanceof InterruptedException) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    vm.delete();
  }

  public List<ManagedResource> resources() {
    List<ManagedResource> out = new ArrayList<>();
    for (VmDirectory d : VmDirectory.all()) {
      d.read()
          .ifPresent(
              r ->
                  out.add(
                      new ManagedResource(
                          "microvm",
                          r.id(),
                          "agentnest-" + r.id().substring(0, 12),
                          d.running() ? "running" : "exited",
                          Instant.ofEpochMilli(r.createdEpochMs()),
                          d.sizeBytes(),
                          r.labels())));
    }
    return out;
  }
}
