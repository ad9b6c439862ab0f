package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SnapshotCheck;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.context.SandboxStarts;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.state.StateBudget;
import io.agentnest.internal.state.StateDisk;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.AgentNestHome;
import io.agentnest.spi.support.DiskGuard;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Snapshots on the host: {@code AGENTNEST_HOME/snapshots/NAME/} with one file per part (workspace
 * and scratch tars, one pickled namespace per Python session) and {@code manifest.json}, which
 * names every part with its size and sha256 and is signed with HMAC-SHA256 under a key only this
 * installation has ({@code snapshot.key}, mode 0600). Nothing is trusted before the signature and
 * every part's hash check out.
 *
 * <p>Why it is just over 600 lines: it holds the save and the restore sequences, each a series of
 * steps that must be read in order (verify before trust); the manifest and its signing, the parts
 * and the checkpoint memory are classes of their own.
 */
public final class SnapshotStore {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotStore.class);

  private final Path root;
  private final Function<String, RuntimeBackend> backends;
  private final DiskGuard.FreeSpace freeSpace;
  private final SnapshotKey key;

  /**
   * The store at {@code root}, its key beside it; {@code backends} gives the backend a config names
   * (the engine that checkpoints, restores and knows image ids).
   */
  public SnapshotStore(Path root, Function<String, RuntimeBackend> backends) {
    this(root, backends, DiskGuard.FILESYSTEM);
  }

  SnapshotStore(
      Path root, Function<String, RuntimeBackend> backends, DiskGuard.FreeSpace freeSpace) {
    this.root = root;
    this.backends = backends;
    this.freeSpace = freeSpace;
    this.key = SnapshotKey.besideStore(root);
  }

  /** The store of this installation, on the backends of the classpath. */
  public static SnapshotStore local() {
    return new SnapshotStore(AgentNestHome.dir().resolve("snapshots"), Backends::get);
  }

  public Path root() {
    return root;
  }

  static String checkName(String name) {
    if (name == null || !Manifest.NAME.matcher(name).matches() || name.contains("..")) {
      String shown = name == null ? "null" : Bounded.text(name, 60);
      throw new SnapshotException(
          SnapshotException.Reason.BAD_NAME,
          "snapshot name '"
              + shown.replace("\0", "\\0")
              + "' is invalid: use 1-100 letters, digits, '.', '_' or '-', starting with a letter"
              + " or digit, e.g. 'after-training'");
    }
    return name;
  }

  // ------------------------------------------------------------------------------- save

  /**
   * Captures {@code sb} and writes it as {@code name}: the parts stream from the sandbox straight
   * into a staging directory (hashed on the way, never held in memory whole), which becomes the
   * snapshot by one rename.
   */
  public SnapshotInfo save(SandboxContext sb, String name, boolean replace) {
    checkName(name);
    refuseExisting(name, replace);
    SandboxConfig handle = sb.config();
    SandboxConfig config = withActualRuntime(handle, sb.id());
    RuntimeBackend backend = backends.apply(config.backend());
    String imageId =
        backend
            .imageId(config.image())
            .orElseThrow(
                () ->
                    new SnapshotException(
                        SnapshotException.Reason.IMAGE_CHANGED,
                        "the engine no longer has image '"
                            + config.image()
                            + "' of this sandbox: a snapshot records the image it applies to;"
                            + " build or tag the image again"));
    List<String> sessionNames = sb.sessionNames();
    // What may come out of the sandbox: a multiple of its memory limit, all parts together.
    StateBudget budget = StateBudget.of(sb);
    return stage(
        name,
        config,
        imageId,
        replace,
        sb.id(),
        w -> {
          try (Parts.PartWriter ws = w.open("workspace.tar", "workspace");
              Parts.PartWriter tmp = w.open("tmp.tar", "tmp")) {
            SandboxState.captureFiles(sb, ws, tmp, budget);
          }
          int i = 0;
          for (String s : sessionNames) {
            Parts.PartWriter out = w.open("session-" + i + ".bin", "session");
            SandboxState.Dumped d;
            try (out) {
              d = SandboxState.dumpSession(sb, s, out, budget);
            }
            if (d == null) {
              w.drop(out);
              continue;
            }
            Parts.PartWriter kept = out;
            if (d.failed()) {
              // Nothing usable: keep an empty part, with the reason in its metadata.
              w.drop(out);
              kept = w.open("session-" + i + ".bin", "session");
              kept.close();
            }
            kept.meta = Manifest.sessionMeta(d.name(), d.extraBytes(), d.variables(), d.skipped());
            i++;
          }
          // Files and sessions stay in the snapshot too: a host that cannot restore the
          // checkpoint (runc, no writable engine root) restores them instead.
          CheckpointMemory.capture(backend, sb, config, !sb.attached(), name, w);
        });
  }

  /**
   * The config with the runtime the sandbox really runs on, when the handle does not name one (a
   * handle from {@code Sandbox.connect}, as {@code agentnest snapshot save ID} uses), where that
   * runtime checkpoints memory: a snapshot of a gVisor sandbox then restores on gVisor.
   */
  private SandboxConfig withActualRuntime(SandboxConfig config, String id) {
    if (config.runtime() != null) {
      return config;
    }
    RuntimeBackend backend = backends.apply(config.backend());
    String actual = backend.inspect(id).map(SandboxInfo::runtime).orElse("runc");
    SandboxConfig withActual = config.toBuilder().runtime(actual).build();
    return backend.checkpointsMemory(withActual) ? withActual : config;
  }

  /** Writes an already captured state (tests, and callers holding one) as {@code name}. */
  SnapshotInfo write(
      String name,
      SandboxConfig config,
      String imageId,
      SandboxState.Captured state,
      boolean replace) {
    checkName(name);
    refuseExisting(name, replace);
    return stage(
        name,
        config,
        imageId,
        replace,
        null,
        w -> {
          try (Parts.PartWriter ws = w.open("workspace.tar", "workspace")) {
            ws.write(state.workspace());
          }
          try (Parts.PartWriter tmp = w.open("tmp.tar", "tmp")) {
            tmp.write(state.tmp());
          }
          int i = 0;
          for (SandboxState.Session s : state.sessions()) {
            try (Parts.PartWriter out = w.open("session-" + i++ + ".bin", "session")) {
              out.write(s.data());
              out.meta = Manifest.sessionMeta(s.name(), s.extraBytes(), s.variables(), s.skipped());
            }
          }
        });
  }

  private void refuseExisting(String name, boolean replace) {
    if (!replace && Files.exists(root.resolve(name), LinkOption.NOFOLLOW_LINKS)) {
      throw new SnapshotException(
          SnapshotException.Reason.EXISTS,
          "snapshot '"
              + name
              + "' exists: choose another name, or replace it (--force, or"
              + " snapshot(name, true))");
    }
  }

  private static SnapshotException diskFull(String name, DiskGuard.DiskFullException e) {
    return new SnapshotException(
        SnapshotException.Reason.DISK_FULL, "snapshot '" + name + "' not saved: " + e.getMessage());
  }

  /** The disk guard's refusal behind {@code e} (a sink's failure wraps it), or null. */
  private static DiskGuard.@Nullable DiskFullException diskFullCause(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof DiskGuard.DiskFullException full) {
        return full;
      }
    }
    return null;
  }

  SnapshotInfo stage(
      String name,
      SandboxConfig config,
      String imageId,
      boolean replace,
      @Nullable String sandboxId,
      Parts.Filler filler) {
    Map<String, byte[]> secrets = new LinkedHashMap<>();
    config
        .secretEnv()
        .forEach((k, v) -> secrets.put(k, v.reveal().getBytes(StandardCharsets.UTF_8)));
    try {
      Files.createDirectories(root);
      DiskGuard disk = StateDisk.guard(root, freeSpace);
      if (!disk.hasRoom()) {
        try {
          disk.beforeWrite(0);
        } catch (DiskGuard.DiskFullException e) {
          throw diskFull(name, e);
        }
      }
      Path staging = Files.createTempDirectory(root, ".saving-" + name + "-");
      try {
        Parts.Staging w = new Parts.Staging(staging, secrets, disk);
        try {
          filler.fill(w);
        } catch (RuntimeException | IOException e) {
          DiskGuard.DiskFullException full = diskFullCause(e);
          if (full != null) {
            throw diskFull(name, full);
          }
          throw e;
        }
        for (Parts.PartWriter p : w.parts) {
          String secret = p.secretFound();
          if (secret != null) {
            String where =
                switch (p.kind) {
                  case "session" ->
                      "Python session '"
                          + (p.meta == null ? "?" : p.meta.path("session").asText())
                          + "' (a variable holds it: del it, or set it to None)";
                  case "memory" ->
                      "the process memory (a process holds it: end it, or del the variable)";
                  default ->
                      (p.kind.equals("tmp") ? "/tmp" : "/workspace")
                          + " (a file holds it: delete the file)";
                };
            throw new SnapshotException(
                SnapshotException.Reason.SECRET,
                "snapshot '"
                    + name
                    + "' not saved: the value of secret variable "
                    + secret
                    + " appears in "
                    + where
                    + "; secret values are never written to disk, remove it and save again");
          }
        }
        ObjectNode m = Manifest.build(name, config, imageId, w.parts, w.memoryNote);
        if (sandboxId != null) {
          m.put("sandbox", sandboxId);
        }
        byte[] body = Json.MAPPER.writeValueAsBytes(m);
        if (body.length > Manifest.MAX_MANIFEST_BYTES / 2) {
          // Many sessions with many names: keep the counts, drop the lists.
          for (JsonNode p : m.path("parts")) {
            if (p.path("meta") instanceof ObjectNode meta) {
              meta.putArray("variables");
              meta.putArray("skipped");
            }
          }
          body = Json.MAPPER.writeValueAsBytes(m);
        }
        if (body.length > Manifest.MAX_MANIFEST_BYTES / 2) {
          throw new SnapshotException(
              SnapshotException.Reason.IO,
              "snapshot '"
                  + name
                  + "' would need a manifest of "
                  + body.length
                  + " bytes, more than the cap of "
                  + Manifest.MAX_MANIFEST_BYTES / 2
                  + ": the sandbox's configuration (seccomp profile, labels, rules) is too large");
        }
        SnapshotIndex index = index();
        index.locked(
            state -> {
              publish(name, m, state, index, staging, replace);
              return true;
            });
        return Manifest.info(m);
      } finally {
        if (Files.exists(staging, LinkOption.NOFOLLOW_LINKS)) {
          HostFiles.deleteTree(staging);
        }
      }
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO,
          "cannot write snapshot '"
              + name
              + "' under "
              + root
              + ": "
              + e.getMessage()
              + " (is the disk full, or the directory not writable?)");
    }
  }

  /**
   * Under the index's lock: gives the manifest the next generation, signs and writes it, moves the
   * staging directory into place and records the generation in the index.
   */
  private void publish(
      String name,
      ObjectNode m,
      SnapshotIndex.State state,
      SnapshotIndex index,
      Path staging,
      boolean replace)
      throws IOException {
    long generation = state.counter() + 1;
    m.put("generation", generation);
    Manifest.Signed signed = Manifest.sign(m, key);
    Path mf = staging.resolve("manifest.json");
    try (var ch = FileChannel.open(mf, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(signed.bytes()));
      ch.force(true);
    }
    Path dir = root.resolve(name);
    if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      if (!replace) {
        throw new SnapshotException(
            SnapshotException.Reason.EXISTS,
            "snapshot '"
                + name
                + "' was saved by someone else meanwhile: choose another name, or replace"
                + " it (--force, or snapshot(name, true))");
      }
      Path old = root.resolve(".removing-" + name + "-" + System.nanoTime());
      Files.move(dir, old, StandardCopyOption.ATOMIC_MOVE);
      HostFiles.deleteTree(old);
    }
    try {
      Files.move(staging, dir, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO,
          "the snapshot store " + root + " must be on one file system");
    }
    index.put(state, name, generation, signed.signature());
  }

  // ---------------------------------------------------------------------------- restore

  /**
   * Starts a sandbox from snapshot {@code name}. With {@code overrides} null, the saved config is
   * used; a snapshot saved with secret environment variables needs them supplied in {@code
   * overrides}. The manifest's signature and every part's size and sha256 are checked before a
   * sandbox is created; the parts are hashed again while they stream into it.
   */
  public Sandbox restore(String name, @Nullable SandboxConfig overrides, SandboxStarts starts) {
    return SnapshotRestore.restore(
        load(name), name, overrides, backends, restoringParent(), starts);
  }

  /**
   * Reads and verifies the manifest of {@code name} (signature, format, part list), and that it is
   * the latest one saved under that name (the signed index).
   */
  Loaded load(String name) {
    return load(name, true);
  }

  private Loaded load(String name, boolean latestOnly) {
    checkName(name);
    Path dir = root.resolve(name);
    Path mf = dir.resolve("manifest.json");
    if (Files.isSymbolicLink(dir)) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "snapshot '"
              + name
              + "' in "
              + root
              + " is a symbolic link, not a directory the store made: it is refused; remove the"
              + " link ('agentnest snapshot rm "
              + name
              + "')");
    }
    if (!Files.isRegularFile(mf, LinkOption.NOFOLLOW_LINKS)) {
      throw new SnapshotException(
          SnapshotException.Reason.NOT_FOUND,
          "no snapshot '" + name + "' in " + root + ": 'agentnest snapshot ls' lists them");
    }
    Manifest.Verified v = Manifest.read(mf, name, key);
    JsonNode m = v.manifest();
    if (latestOnly) {
      try {
        index().checkLatest(name, m, v.signature());
      } catch (IOException e) {
        throw new SnapshotException(
            SnapshotException.Reason.IO,
            "cannot read the snapshot index beside " + keyFile() + ": " + e.getMessage());
      }
    }
    return new Loaded(m, dir);
  }

  /** The signed record of the latest manifest per name, beside the key (outside the store). */
  SnapshotIndex index() {
    return new SnapshotIndex(
        key.file().resolveSibling("snapshot.index"), key::hmac, this::adoptable);
  }

  /** The store's valid snapshots as index entries: adopted once, when there is no index yet. */
  private Map<String, SnapshotIndex.Entry> adoptable() throws IOException {
    Map<String, SnapshotIndex.Entry> out = new LinkedHashMap<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path d : ds) {
        String n = d.getFileName().toString();
        if (n.startsWith(".") || !Manifest.NAME.matcher(n).matches()) {
          continue;
        }
        try {
          JsonNode m = load(n, false).manifest();
          JsonNode signed = Json.MAPPER.readTree(Files.readAllBytes(d.resolve("manifest.json")));
          out.put(
              n,
              new SnapshotIndex.Entry(
                  m.path("generation").asLong(0), signed.path("hmac_sha256").asText()));
        } catch (SnapshotException e) {
          LOG.warn("snapshot '{}' not adopted into the index: {}", n, e.getMessage());
        }
      }
    }
    return out;
  }

  // ------------------------------------------------------------------------- list, remove

  /**
   * Valid snapshots, newest first: those whose checks pass ({@link #check} without hashing); ones
   * that fail them are left out.
   */
  public List<SnapshotInfo> list() {
    List<SnapshotInfo> out = new ArrayList<>();
    for (SnapshotCheck c : check(false)) {
      SnapshotInfo info = c.info();
      if (c.ok() && info != null) {
        out.add(info);
      }
    }
    return out;
  }

  /**
   * Every snapshot directory with its checks' result, newest first (those whose manifest does not
   * verify last): the signature and the index, each part's presence and size, and with {@code
   * hashParts} each part's sha256, as a restore checks them.
   */
  public List<SnapshotCheck> check(boolean hashParts) {
    List<SnapshotCheck> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path d : ds) {
        String n = d.getFileName().toString();
        if (n.startsWith(".") || !Manifest.NAME.matcher(n).matches()) {
          continue;
        }
        SnapshotInfo info = null;
        try {
          Loaded l = load(n);
          info = Manifest.info(l.manifest());
          if (hashParts) {
            Parts.verifyAll(l);
          } else {
            for (JsonNode p : l.manifest().path("parts")) {
              Parts.checkPartFile(l.dir(), p, n);
            }
          }
          out.add(new SnapshotCheck(n, info, null));
        } catch (SnapshotException e) {
          out.add(new SnapshotCheck(n, info, e.getMessage()));
        } catch (IOException e) {
          out.add(new SnapshotCheck(n, info, "cannot read it: " + e.getMessage()));
        }
      }
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO, "cannot read " + root + ": " + e.getMessage());
    }
    out.sort(
        Comparator.comparing(
                (SnapshotCheck c) -> c.info() == null ? Instant.MIN : c.info().created())
            .reversed());
    return out;
  }

  /** The id of the sandbox a snapshot was taken of, if its manifest verifies. */
  public Optional<String> sourceSandbox(String name) {
    try {
      JsonNode m = load(name).manifest();
      return m.hasNonNull("sandbox") ? Optional.of(m.path("sandbox").asText()) : Optional.empty();
    } catch (SnapshotException e) {
      return Optional.empty();
    }
  }

  /** Removes snapshot {@code name}; false when there is none. */
  public boolean remove(String name) {
    checkName(name);
    Path dir = root.resolve(name);
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return false;
    }
    try {
      SnapshotIndex index = index();
      index.locked(
          state -> {
            Path old = root.resolve(".removing-" + name + "-" + System.nanoTime());
            Files.move(dir, old, StandardCopyOption.ATOMIC_MOVE);
            index.remove(state, name);
            HostFiles.deleteTree(old);
            return true;
          });
      return true;
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO, "cannot remove snapshot '" + name + "': " + e.getMessage());
    }
  }

  /** Saves and removals that stopped half way (a crashed process) leave these behind. */
  public record Leftover(String name, Path dir, long bytes) {}

  /** Staging directories older than this are no save in progress any more. */
  public static final Duration LEFTOVER_AGE = Duration.ofHours(1);

  /** Where restores place memory parts: the key's directory, which only its owner writes. */
  private Path restoringParent() {
    Path parent = keyFile().getParent();
    return parent == null ? root : parent;
  }

  /** Staging, removal and restore directories of this store older than {@code age}. */
  public List<Leftover> leftovers(Duration age, Instant now) {
    List<Leftover> out = new ArrayList<>(leftovers(root, age, now));
    if (!restoringParent().equals(root)) {
      leftovers(restoringParent(), age, now).stream()
          .filter(l -> l.name().startsWith(".restoring-"))
          .forEach(out::add);
    }
    return out;
  }

  private static List<Leftover> leftovers(Path root, Duration age, Instant now) {
    List<Leftover> out = new ArrayList<>();
    if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path d : ds) {
        String n = d.getFileName().toString();
        if (!(n.startsWith(".saving-") || n.startsWith(".removing-") || n.startsWith(".restoring-"))
            || !Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)
            || Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS)
                .toInstant()
                .isAfter(now.minus(age))) {
          continue;
        }
        long bytes = 0;
        try (Stream<Path> s = Files.walk(d)) {
          for (Path f : s.limit(10_000).toList()) {
            if (Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
              bytes += Files.size(f);
            }
          }
        }
        out.add(new Leftover(n, d, bytes));
      }
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO, "cannot read " + root + ": " + e.getMessage());
    }
    return out;
  }

  public void removeLeftover(Leftover l) {
    try {
      HostFiles.deleteTree(l.dir());
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO, "cannot remove " + l.dir() + ": " + e.getMessage());
    }
  }

  Path keyFile() {
    return key.file();
  }

  String hmac(byte[] body) throws IOException {
    return key.hmac(body);
  }
}
