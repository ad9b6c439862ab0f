package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ForkReport;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * Snapshots on the host: {@code AGENTNEST_HOME/snapshots/NAME/} with one file per part (workspace
 * and scratch tars, one pickled namespace per Python session) and {@code manifest.json}, which
 * names every part with its size and sha256 and is signed with HMAC-SHA256 under a key only this
 * installation has ({@code snapshot.key}, mode 0600). Nothing is trusted before the signature and
 * every part's hash check out.
 */
public final class SnapshotStore {
  static final int FORMAT = 1;
  static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");
  private static final long MAX_MANIFEST_BYTES = 4L << 20;

  /** Variable names and skipped objects listed per session in a manifest (counts are kept). */
  static final int MAX_LISTED = 1000;

  /** The subdirectory of a snapshot holding a gVisor checkpoint image (parts of kind memory). */
  static final String MEMORY_DIR = "memory";

  /** Files of a checkpoint image (runsc 2022-12 writes one, checkpoint.img). */
  static final int MAX_MEMORY_PARTS = 64;

  /** All memory parts together; a sandbox's memory is capped far lower by its config. */
  static final long MAX_MEMORY_BYTES = 16L << 30;

  private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(SnapshotStore.class);

  private final Path root;
  private final DiskGuard.FreeSpace freeSpace;

  public SnapshotStore(Path root) {
    this(root, DiskGuard.FILESYSTEM);
  }

  /** For tests: the free space as {@code freeSpace} says. */
  SnapshotStore(Path root, DiskGuard.FreeSpace freeSpace) {
    this.root = root;
    this.freeSpace = freeSpace;
  }

  /** The store of this installation. */
  public static SnapshotStore local() {
    return new SnapshotStore(AgentNestHome.dir().resolve("snapshots"));
  }

  public Path root() {
    return root;
  }

  static String checkName(String name) {
    if (name == null || !NAME.matcher(name).matches() || name.contains("..")) {
      String shown =
          name == null ? "null" : name.length() > 60 ? name.substring(0, 60) + "..." : name;
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
  public SnapshotInfo save(DefaultSandbox sb, String name, boolean replace) {
    checkName(name);
    refuseExisting(name, replace);
    SandboxConfig handle = sb.config();
    SandboxConfig config = withActualRuntime(handle, sb.id());
    String imageId =
        Backends.get(config.backend())
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
          try (PartWriter ws = w.open("workspace.tar", "workspace");
              PartWriter tmp = w.open("tmp.tar", "tmp")) {
            SandboxState.captureFiles(sb, ws, tmp, budget);
          }
          int i = 0;
          for (String s : sessionNames) {
            PartWriter out = w.open("session-" + i + ".bin", "session");
            SandboxState.Dumped d;
            try (out) {
              d = SandboxState.dumpSession(sb, s, out, budget);
            }
            if (d == null) {
              w.drop(out);
              continue;
            }
            PartWriter kept = out;
            if (d.failed()) {
              // Nothing usable: keep an empty part, with the reason in its metadata.
              w.drop(out);
              kept = w.open("session-" + i + ".bin", "session");
              kept.close();
            }
            kept.meta = sessionMeta(d.name(), d.extraBytes(), d.variables(), d.skipped());
            i++;
          }
          // Files and sessions stay in the snapshot too: a host that cannot restore the
          // checkpoint (runc, no writable engine root) restores them instead.
          captureMemory(sb, config, handle.runtime() != null, name, w);
        });
  }

  /**
   * The config with the runtime the sandbox really runs on, when the handle does not name one (a
   * handle from {@code Sandbox.connect}, as {@code agentnest snapshot save ID} uses): a snapshot of
   * a gVisor sandbox then restores on gVisor.
   */
  private static SandboxConfig withActualRuntime(SandboxConfig config, String id) {
    if (config.runtime() != null) {
      return config;
    }
    String actual =
        Backends.get(config.backend())
            .inspect(id)
            .map(io.agentnest.SandboxInfo::runtime)
            .orElse("runc");
    return gvisor(actual) ? config.toBuilder().runtime(actual).build() : config;
  }

  static boolean gvisor(@Nullable String runtime) {
    return runtime != null && (runtime.contains("gvisor") || runtime.contains("runsc"));
  }

  /**
   * On gVisor, checkpoints the sandbox (it stops for the checkpoint and runs on from it at once)
   * and adds the checkpoint image's files as parts of kind {@code memory}. Leaves the note on
   * {@code w} when it cannot.
   */
  private static void captureMemory(
      DefaultSandbox sb, SandboxConfig config, boolean ownHandle, String name, Staging w)
      throws IOException {
    if (!gvisor(config.runtime())) {
      return;
    }
    if (!ownHandle) {
      // Only the handle that created the sandbox knows its secret variables.
      w.memoryNote = NOTE_ATTACHED;
      return;
    }
    if (!config.secretEnv().isEmpty()) {
      w.memoryNote = NOTE_SECRETS;
      return;
    }
    Path dir = w.dir.resolve(MEMORY_DIR);
    // The runtime writes the image itself, about the size of the sandbox's memory: make sure that
    // much fits above the reserve first.
    w.disk.beforeWrite(config.memoryBytes());
    AgentChannel channel = sb.channel();
    boolean done;
    try {
      done =
          Backends.get(config.backend())
              .checkpointTo(sb.id(), dir, channel::suspend, channel::resume);
    } catch (RuntimeException e) {
      if (!channel.isAlive() || channel.isSuspended()) {
        channel.close();
      }
      throw new SnapshotException(
          SnapshotException.Reason.IO,
          "snapshot '"
              + name
              + "' not saved: its process memory could not be checkpointed: "
              + Bounded.text(String.valueOf(e.getMessage()), 1000));
    }
    if (!done) {
      w.memoryNote = NOTE_NO_ENGINE;
      return;
    }
    List<Path> files = new ArrayList<>();
    // Bounded: a tree with more entries than a valid image can have is refused, never cut short.
    long maxEntries = MAX_MEMORY_PARTS * 4L;
    List<Path> entries;
    try (Stream<Path> s =
        Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) ? Files.walk(dir) : Stream.empty()) {
      entries = s.limit(maxEntries + 1).toList();
    }
    if (entries.size() > maxEntries) {
      throw new SnapshotException(
          SnapshotException.Reason.IO,
          "snapshot '"
              + name
              + "' not saved: the checkpoint image has more than "
              + maxEntries
              + " files and directories");
    }
    for (Path f : entries) {
      if (Files.isDirectory(f, LinkOption.NOFOLLOW_LINKS)) {
        continue;
      }
      if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
        throw new SnapshotException(
            SnapshotException.Reason.IO,
            "snapshot '"
                + name
                + "' not saved: the checkpoint image holds "
                + dir.relativize(f)
                + ", which is not a regular file");
      }
      files.add(f);
    }
    if (files.isEmpty() || files.size() > MAX_MEMORY_PARTS) {
      throw new SnapshotException(
          SnapshotException.Reason.IO,
          "snapshot '"
              + name
              + "' not saved: the checkpoint image has "
              + files.size()
              + " files (expected 1 to "
              + MAX_MEMORY_PARTS
              + ")");
    }
    files.sort(Comparator.naturalOrder());
    long total = 0;
    for (Path f : files) {
      String file = MEMORY_DIR + "/" + dir.relativize(f).toString().replace('\\', '/');
      if (!validMemoryFile(file)) {
        throw new SnapshotException(
            SnapshotException.Reason.IO,
            "snapshot '"
                + name
                + "' not saved: the checkpoint image has a file named '"
                + Bounded.text(file, 120)
                + "', which a snapshot does not store");
      }
      total += w.adopt(f, file, "memory").size;
      if (total > MAX_MEMORY_BYTES) {
        throw new SnapshotException(
            SnapshotException.Reason.IO,
            "snapshot '"
                + name
                + "' not saved: its checkpoint image is larger than "
                + MAX_MEMORY_BYTES
                + " bytes");
      }
    }
    w.memoryNote = NOTE_CAPTURED;
  }

  /**
   * A memory part's file name: {@code memory/} and 1-4 path segments of 1-100 letters, digits, '.',
   * '_' or '-' (starting with a letter or digit, never {@code ..}); nothing absolute, no
   * backslashes, no empty segments.
   */
  static boolean validMemoryFile(@Nullable String file) {
    if (file == null || file.length() > 300 || !file.startsWith(MEMORY_DIR + "/")) {
      return false;
    }
    String[] segments = file.substring(MEMORY_DIR.length() + 1).split("/", -1);
    if (segments.length > 4) {
      return false;
    }
    for (String seg : segments) {
      if (!SEGMENT.matcher(seg).matches() || seg.contains("..")) {
        return false;
      }
    }
    return true;
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
          try (PartWriter ws = w.open("workspace.tar", "workspace")) {
            ws.write(state.workspace());
          }
          try (PartWriter tmp = w.open("tmp.tar", "tmp")) {
            tmp.write(state.tmp());
          }
          int i = 0;
          for (SandboxState.Session s : state.sessions()) {
            try (PartWriter out = w.open("session-" + i++ + ".bin", "session")) {
              out.write(s.data());
              out.meta = sessionMeta(s.name(), s.extraBytes(), s.variables(), s.skipped());
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

  private static ObjectNode sessionMeta(
      String session, long extraBytes, List<String> variables, List<ForkReport.Skipped> skipped) {
    ObjectNode meta = Json.object().put("session", session).put("extra_bytes", extraBytes);
    meta.put("variables_count", variables.size()).put("skipped_count", skipped.size());
    variables.stream().limit(MAX_LISTED).forEach(meta.putArray("variables")::add);
    ArrayNode sk = meta.putArray("skipped");
    for (ForkReport.Skipped x : skipped.subList(0, Math.min(skipped.size(), MAX_LISTED))) {
      sk.addObject()
          .put("session", x.session())
          .put("name", x.name())
          .put("type", x.type())
          .put("reason", x.reason());
    }
    return meta;
  }

  /** Fills a staging directory with parts. */
  interface Filler {
    void fill(Staging w) throws IOException;
  }

  /** The parts written so far into a staging directory. */
  static final class Staging {
    final Path dir;
    final List<PartWriter> parts = new ArrayList<>();
    final Map<String, byte[]> secrets;
    final DiskGuard disk;

    /** What the manifest says about process memory; null: the runtime's default note. */
    @Nullable String memoryNote;

    Staging(Path dir, Map<String, byte[]> secrets, DiskGuard disk) {
      this.dir = dir;
      this.secrets = secrets;
      this.disk = disk;
    }

    PartWriter open(String file, String kind) throws IOException {
      PartWriter p = new PartWriter(dir.resolve(file), file, kind, secrets, disk);
      parts.add(p);
      return p;
    }

    /**
     * Registers a file already in the staging directory as a part: read once, streaming, for its
     * size, sha256 and the secret scan.
     */
    PartWriter adopt(Path path, String file, String kind) throws IOException {
      // Already on disk (a checkpoint image): read, not written, so no disk check.
      PartWriter p =
          new PartWriter(path, file, kind, secrets, OutputStream.nullOutputStream(), null);
      parts.add(p);
      byte[] buf = new byte[1 << 16];
      try (p;
          InputStream in = Files.newInputStream(path, LinkOption.NOFOLLOW_LINKS)) {
        for (int n; (n = in.read(buf)) >= 0; ) {
          p.write(buf, 0, n);
        }
      }
      return p;
    }

    void drop(PartWriter p) throws IOException {
      parts.remove(p);
      Files.deleteIfExists(p.path);
    }
  }

  /**
   * One part being written: counts, hashes, and looks for secret values, which never go to disk (a
   * part holding one fails the save).
   */
  static final class PartWriter extends OutputStream {
    final Path path;
    final String file;
    final String kind;
    final MessageDigest sha = HostFiles.newSha256();
    private final OutputStream out;
    private final SecretScan scan;
    private final @Nullable DiskGuard disk;
    @Nullable ObjectNode meta;
    long size;

    PartWriter(Path path, String file, String kind, Map<String, byte[]> secrets, DiskGuard disk)
        throws IOException {
      this(
          path,
          file,
          kind,
          secrets,
          new java.io.BufferedOutputStream(
              Files.newOutputStream(path, StandardOpenOption.CREATE_NEW), 1 << 16),
          disk);
    }

    private PartWriter(
        Path path,
        String file,
        String kind,
        Map<String, byte[]> secrets,
        OutputStream out,
        @Nullable DiskGuard disk) {
      this.path = path;
      this.file = file;
      this.kind = kind;
      this.scan = new SecretScan(secrets);
      this.out = out;
      this.disk = disk;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (scan.found() != null) {
        return; // the save fails; nothing more of this part goes to disk
      }
      scan.update(b, off, len);
      if (scan.found() != null) {
        return;
      }
      if (disk != null) {
        // Checked during the save, not only before: a large state must not fill the disk.
        disk.beforeWrite(len);
      }
      out.write(b, off, len);
      sha.update(b, off, len);
      size += len;
    }

    @Override
    public void close() throws IOException {
      out.close();
    }

    @Nullable String secretFound() {
      return scan.found();
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
      Filler filler) {
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
        Staging w = new Staging(staging, secrets, disk);
        try {
          filler.fill(w);
        } catch (RuntimeException | IOException e) {
          DiskGuard.DiskFullException full = diskFullCause(e);
          if (full != null) {
            throw diskFull(name, full);
          }
          throw e;
        }
        for (PartWriter p : w.parts) {
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
        ObjectNode m = manifest(name, config, imageId, w.parts, w.memoryNote);
        if (sandboxId != null) {
          m.put("sandbox", sandboxId);
        }
        byte[] body = Json.MAPPER.writeValueAsBytes(m);
        if (body.length > MAX_MANIFEST_BYTES / 2) {
          // Many sessions with many names: keep the counts, drop the lists.
          for (JsonNode p : m.path("parts")) {
            if (p.path("meta") instanceof ObjectNode meta) {
              meta.putArray("variables");
              meta.putArray("skipped");
            }
          }
          body = Json.MAPPER.writeValueAsBytes(m);
        }
        if (body.length > MAX_MANIFEST_BYTES / 2) {
          throw new SnapshotException(
              SnapshotException.Reason.IO,
              "snapshot '"
                  + name
                  + "' would need a manifest of "
                  + body.length
                  + " bytes, more than the cap of "
                  + MAX_MANIFEST_BYTES / 2
                  + ": the sandbox's configuration (seccomp profile, labels, rules) is too large");
        }
        SnapshotIndex index = index();
        index.locked(
            state -> {
              publish(name, m, state, index, staging, replace);
              return true;
            });
        return info(m);
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
    byte[] body = Json.MAPPER.writeValueAsBytes(m);
    String signature = hmac(body);
    ObjectNode signed = Json.object();
    signed.set("manifest", m);
    signed.put("hmac_sha256", signature);
    Path mf = staging.resolve("manifest.json");
    try (var ch =
        java.nio.channels.FileChannel.open(
            mf, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(Json.MAPPER.writeValueAsBytes(signed)));
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
    index.put(state, name, generation, signature);
  }

  private static ObjectNode manifest(
      String name,
      SandboxConfig config,
      String imageId,
      List<PartWriter> parts,
      @Nullable String memoryNote) {
    ObjectNode m = Json.object();
    m.put("format", FORMAT).put("name", name).put("created", Instant.now().toString());
    m.put("image", config.image()).put("image_id", imageId);
    if (config.runtime() != null) {
      m.put("runtime", config.runtime());
    }
    m.set("config", configJson(config));
    boolean memory = parts.stream().anyMatch(p -> p.kind.equals("memory"));
    m.put("memory", memory)
        .put("memory_note", memoryNote != null ? memoryNote : memoryNote(config.runtime()));
    ArrayNode list = m.putArray("parts");
    long total = 0;
    for (PartWriter p : parts) {
      ObjectNode o = list.addObject().put("file", p.file).put("kind", p.kind);
      o.put("size", p.size).put("sha256", HexFormat.of().formatHex(p.sha.digest()));
      if (p.meta != null) {
        o.set("meta", p.meta);
      }
      total += p.size;
    }
    m.put("bytes", total);
    return m;
  }

  static final String NOTE_CAPTURED =
      "process memory captured: a gVisor checkpoint of the whole sandbox (every process with its"
          + " memory, threads, open files and generators, and /tmp and /workspace); restored on"
          + " gVisor where the Docker engine's root directory is writable, elsewhere the files and"
          + " pickled Python sessions also saved are restored instead";

  static final String NOTE_SECRETS =
      "process memory not captured: the sandbox has secret environment variables, whose values"
          + " are in its processes' memory and are never written to disk; Python sessions are"
          + " carried as pickled namespaces, other processes are not kept";

  static final String NOTE_ATTACHED =
      "process memory not captured: this handle was attached to a running sandbox"
          + " (Sandbox.connect, 'agentnest snapshot save ID') and cannot know whether the sandbox"
          + " has secret environment variables, whose values would be in its memory; to keep the"
          + " memory, save from the handle that created the sandbox. Python sessions are carried"
          + " as pickled namespaces, other processes are not kept";

  static final String NOTE_NO_ENGINE =
      "process memory not captured: the Docker engine cannot checkpoint this sandbox here (gVisor"
          + " checkpoints need an experimental dockerd on this host whose root directory this"
          + " process can write, i.e. run as root: see 'agentnest doctor'); Python sessions are"
          + " carried as pickled namespaces, other processes are not kept";

  static String memoryNote(@Nullable String runtime) {
    return gvisor(runtime)
        ? NOTE_NO_ENGINE
        : "process memory not captured: runc checkpoints need CRIU, which does not work on every"
            + " kernel; Python sessions are carried as pickled namespaces, other processes are"
            + " not kept";
  }

  /** The parts of the config a restore needs; never secret values (only their names). */
  static ObjectNode configJson(SandboxConfig c) {
    ObjectNode o = Json.object();
    o.put("backend", c.backend()).put("image", c.image());
    if (c.runtime() != null) {
      o.put("runtime", c.runtime());
    }
    o.put("cpus", c.cpus()).put("memory_bytes", c.memoryBytes()).put("pids_limit", c.pidsLimit());
    o.put("tmp_bytes", c.tmpSizeBytes()).put("workspace_bytes", c.workspaceSizeBytes());
    o.put("max_output_bytes", c.maxOutputBytes()).put("user", c.user());
    ObjectNode env = o.putObject("env");
    c.env().forEach(env::put);
    c.secretEnv().keySet().forEach(o.putArray("secret_env_names")::add);
    if (c.network().isNone()) {
      o.put("network", "none");
    } else {
      ObjectNode n = o.putObject("network");
      c.network().rules().forEach(n.putArray("allow")::add);
      c.network().allowedAddresses().forEach(n.putArray("allow_addresses")::add);
    }
    o.put("redact_credentials", c.redactCredentials()).put("workdir", c.workdir());
    ObjectNode labels = o.putObject("labels");
    c.labels().forEach(labels::put);
    o.put("exec_timeout_ms", c.execTimeout().toMillis())
        .put("start_timeout_ms", c.startTimeout().toMillis())
        .put("ttl_ms", c.ttl().toMillis())
        .put("read_only_root", c.readOnlyRootFilesystem())
        .put("read_only_workspace", c.readOnlyWorkspace());
    if (c.seccompProfile() != null) {
      o.put("seccomp_profile", c.seccompProfile());
    }
    io.agentnest.ApprovalPolicy a = c.approvals();
    ObjectNode ap = o.putObject("approvals");
    ap.put("file_deletion", a.fileDeletion().name())
        .put("system_modification", a.systemModification().name())
        .put("timeout_ms", a.timeout().toMillis());
    ArrayNode shell = ap.putArray("shell");
    a.shellRules()
        .forEach(
            r ->
                shell
                    .addObject()
                    .put("regex", r.pattern().pattern())
                    .put("action", r.action().name()));
    ObjectNode py = ap.putObject("python");
    a.pythonRules().forEach((k, v) -> py.put(k, v.name()));
    a.writablePaths().forEach(ap.putArray("writable_paths")::add);
    return o;
  }

  // ---------------------------------------------------------------------------- restore

  /**
   * Starts a sandbox from snapshot {@code name}. With {@code overrides} null, the saved config is
   * used; a snapshot saved with secret environment variables needs them supplied in {@code
   * overrides}. The manifest's signature and every part's size and sha256 are checked before a
   * sandbox is created; the parts are hashed again while they stream into it.
   */
  public Sandbox restore(String name, @Nullable SandboxConfig overrides) {
    Loaded l = load(name);
    SandboxConfig config = overrides != null ? overrides : savedConfig(l.manifest, name);
    String savedImage = l.manifest.path("image").asText();
    if (!config.image().equals(savedImage)) {
      throw new SnapshotException(
          SnapshotException.Reason.IMAGE_CHANGED,
          "snapshot '"
              + name
              + "' was taken on image '"
              + savedImage
              + "', the config asks for '"
              + config.image()
              + "': restore with the same image");
    }
    List<String> secrets = new ArrayList<>();
    l.manifest.path("config").path("secret_env_names").forEach(n -> secrets.add(n.asText()));
    List<String> missing =
        secrets.stream().filter(n -> !config.secretEnv().containsKey(n)).toList();
    if (!missing.isEmpty()) {
      throw new SnapshotException(
          SnapshotException.Reason.NEEDS_CONFIG,
          "snapshot '"
              + name
              + "' was taken with secret environment variables "
              + missing
              + ", which are never written to disk: pass them again with"
              + " Sandbox.restore(name, info.config().toBuilder().secretEnv(...).build()), where"
              + " info is the snapshot's SnapshotInfo from Sandbox.snapshots(); on the command"
              + " line, export them and add --secret-env "
              + String.join(",", missing));
    }
    checkImageId(name, l.manifest, Backends.get(config.backend()).imageId(config.image()));
    verifyParts(l);
    long t0 = System.nanoTime();
    boolean memory = l.manifest.path("memory").asBoolean();
    String whyNot = null;
    if (memory) {
      if (!gvisor(config.runtime())) {
        whyNot =
            "the config asks for runtime "
                + (config.runtime() == null ? "runc (the default)" : config.runtime())
                + ", and a gVisor checkpoint restores only on gVisor";
      } else if (!config.secretEnv().isEmpty()
          || !config.env().equals(savedConfig(l.manifest, name).env())) {
        whyNot =
            "the config sets other environment variables than the saved sandbox had, and its"
                + " processes' environment is part of the saved memory";
      } else {
        try {
          DefaultSandbox sb = restoreMemory(l, config);
          if (sb != null) {
            try {
              restoredAudit(sb, l, t0, true, null);
            } catch (RuntimeException e) {
              sb.destroy();
              throw e;
            }
            return sb;
          }
          whyNot = NO_ENGINE_RESTORE;
        } catch (SnapshotException e) {
          throw e;
        } catch (RuntimeException e) {
          whyNot =
              "gVisor could not restore the checkpoint: "
                  + Bounded.text(String.valueOf(e.getMessage()), 500);
        }
      }
      LOG.warn(
          "snapshot '{}': process memory not restored ({}); restoring its files and pickled"
              + " Python sessions instead",
          name,
          whyNot);
    }
    DefaultSandbox sb = (DefaultSandbox) DefaultSandbox.create(config);
    try {
      restoreInto(sb, l);
      restoredAudit(sb, l, t0, false, memory ? whyNot : null);
      return sb;
    } catch (RuntimeException e) {
      sb.destroy();
      throw e;
    }
  }

  static final String NO_ENGINE_RESTORE =
      "the Docker engine cannot restore a checkpoint here (gVisor restores need an experimental"
          + " dockerd on this host whose root directory this process can write, i.e. run as root:"
          + " see 'agentnest doctor')";

  private static void restoredAudit(
      DefaultSandbox sb, Loaded l, long t0, boolean memoryRestored, @Nullable String whyNot) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("snapshot", l.manifest.path("name").asText());
    d.put("from_sandbox", l.manifest.path("sandbox").asText("unknown"));
    d.put("bytes", l.manifest.path("bytes").asLong());
    d.put("millis", Duration.ofNanos(System.nanoTime() - t0).toMillis());
    d.put("memory_restored", memoryRestored);
    if (whyNot != null) {
      d.put("memory_reason", whyNot);
    }
    sb.audit("snapshot.restored", d);
  }

  /**
   * Starts a sandbox from the snapshot's checkpoint image: the verified memory parts are copied
   * into a private directory, hashed again there, and the backend starts a new sandbox from them,
   * whose agent runs already. Null when the backend cannot restore a checkpoint here. The private
   * directory lies beside the key, not in the store, where a writer of the store could swap it.
   */
  private @Nullable DefaultSandbox restoreMemory(Loaded l, SandboxConfig config) {
    String name = l.manifest.path("name").asText();
    Path tmp;
    Path privateDir = restoringParent();
    try {
      Files.createDirectories(privateDir);
      tmp = Files.createTempDirectory(privateDir, ".restoring-" + name + "-");
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO,
          "cannot restore snapshot '"
              + name
              + "': cannot write "
              + privateDir
              + ": "
              + e.getMessage());
    }
    try {
      for (JsonNode p : l.manifest.path("parts")) {
        if (p.path("kind").asText().equals("memory")) {
          placeMemoryPart(l.dir, p, name, tmp);
        }
      }
      io.agentnest.spi.RuntimeBackend backend = Backends.get(config.backend());
      io.agentnest.spi.SandboxSpec spec = SecurityPolicy.specFor(config);
      java.util.Optional<io.agentnest.spi.BackendSandbox> bs =
          backend.createFromCheckpoint(spec, tmp);
      return bs.isEmpty() ? null : DefaultSandbox.adoptRestored(backend, bs.get(), config, spec);
    } catch (IOException e) {
      throw corrupt(name, "has an unreadable memory part: " + e.getMessage());
    } finally {
      try {
        HostFiles.deleteTree(tmp);
      } catch (IOException e) {
        LOG.warn("cannot remove {}: {} ('agentnest prune' removes it)", tmp, e.toString());
      }
    }
  }

  /**
   * Copies one verified memory part into {@code into} under its name below {@code memory/}, and
   * hashes the copy: the bytes the runtime reads are the ones checked. Never a hard link: a link
   * shares the store's file, which a writer of the store could change after the hash.
   */
  static void placeMemoryPart(Path dir, JsonNode p, String name, Path into) throws IOException {
    String file = p.path("file").asText();
    if (!validMemoryFile(file)) {
      throw corrupt(name, "lists a part with a bad kind or file name");
    }
    Path src = checkPartFile(dir, p, name);
    Path dst = into.resolve(file.substring(MEMORY_DIR.length() + 1));
    Path parent = dst.getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    copyAtMost(src, dst, p.path("size").asLong() + 1);
    MessageDigest sha = HostFiles.newSha256();
    long size = 0;
    byte[] buf = new byte[1 << 16];
    try (InputStream in = Files.newInputStream(dst, LinkOption.NOFOLLOW_LINKS)) {
      for (int n; (n = in.read(buf)) >= 0; ) {
        sha.update(buf, 0, n);
        size += n;
        if (size > p.path("size").asLong()) {
          break;
        }
      }
    }
    if (size != p.path("size").asLong()
        || !HexFormat.of().formatHex(sha.digest()).equals(p.path("sha256").asText())) {
      throw corrupt(name, "has part " + file + " whose sha256 does not match the manifest");
    }
  }

  /** Copies at most {@code max} bytes (a part that grew meanwhile is not copied whole). */
  private static void copyAtMost(Path src, Path dst, long max) throws IOException {
    byte[] buf = new byte[1 << 16];
    long left = max;
    try (InputStream in = Files.newInputStream(src, LinkOption.NOFOLLOW_LINKS);
        java.io.OutputStream out =
            Files.newOutputStream(dst, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      for (int n; left > 0 && (n = in.read(buf, 0, (int) Math.min(buf.length, left))) >= 0; ) {
        out.write(buf, 0, n);
        left -= n;
      }
    }
  }

  /** Refuses a restore when the image under the saved name is no longer the one saved. */
  static void checkImageId(String name, JsonNode manifest, java.util.Optional<String> now) {
    String savedImage = manifest.path("image").asText();
    String savedId = manifest.path("image_id").asText();
    String nowId = now.orElse("(none: the engine has no such image)");
    if (!savedId.equals(nowId)) {
      throw new SnapshotException(
          SnapshotException.Reason.IMAGE_CHANGED,
          "image '"
              + savedImage
              + "' changed since snapshot '"
              + name
              + "' was taken (then "
              + savedId
              + ", now "
              + nowId
              + "): its files were saved relative to that image; tag the old image back"
              + " (docker tag "
              + savedId
              + " "
              + savedImage
              + "), or take a new snapshot on the new image");
    }
  }

  /** Streams the verified parts of {@code l} into a fresh sandbox, hashing them again. */
  static void restoreInto(DefaultSandbox sb, Loaded l) {
    String name = l.manifest.path("name").asText();
    JsonNode ws = l.part("workspace");
    JsonNode tmp = l.part("tmp");
    try (PartReader w = ws == null ? null : PartReader.open(l.dir, ws, name);
        PartReader t = tmp == null ? null : PartReader.open(l.dir, tmp, name)) {
      SandboxState.restoreFiles(sb, w, t);
      if (w != null) {
        w.finish();
      }
      if (t != null) {
        t.finish();
      }
    } catch (IOException e) {
      throw corrupt(name, "has an unreadable part: " + e.getMessage());
    }
    for (JsonNode p : l.manifest.path("parts")) {
      if (p.path("kind").asText().equals("session")) {
        byte[] data = readPart(l.dir, p);
        if (data.length > 0) {
          JsonNode meta = p.path("meta");
          SandboxState.loadSession(
              sb, meta.path("session").asText(), meta.path("extra_bytes").asLong(), data);
        }
      }
    }
  }

  /**
   * One part read back: never more than the manifest's size, hashed on the way; a part that differs
   * from the manifest fails the read (and with it the restore).
   */
  static final class PartReader extends InputStream {
    private final InputStream in;
    private final MessageDigest sha = HostFiles.newSha256();
    private final String snapshot;
    private final String file;
    private final long size;
    private final String expected;
    private long read;

    private PartReader(InputStream in, String snapshot, String file, long size, String sha256) {
      this.in = in;
      this.snapshot = snapshot;
      this.file = file;
      this.size = size;
      this.expected = sha256;
    }

    static @Nullable PartReader open(Path dir, JsonNode p, String snapshot) throws IOException {
      if (p.path("size").asLong() == 0) {
        return null;
      }
      Path f = checkPartFile(dir, p, snapshot);
      return new PartReader(
          new java.io.BufferedInputStream(
              Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS), 1 << 16),
          snapshot,
          p.path("file").asText(),
          p.path("size").asLong(),
          p.path("sha256").asText());
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (read >= size) {
        check();
        return -1;
      }
      int n = in.read(b, off, (int) Math.min(len, size - read));
      if (n < 0) {
        check();
        return -1;
      }
      sha.update(b, off, n);
      read += n;
      return n;
    }

    /** Reads what the consumer left and checks size and hash. */
    void finish() throws IOException {
      byte[] buf = new byte[1 << 16];
      while (read(buf, 0, buf.length) >= 0) {
        // drain: bounded by the manifest's size
      }
    }

    private boolean checked;

    private void check() throws IOException {
      if (checked) {
        return;
      }
      checked = true;
      if (read != size || in.read() >= 0) {
        throw corrupt(snapshot, "has part " + file + " that changed size while it was read");
      }
      if (!HexFormat.of().formatHex(sha.digest()).equals(expected)) {
        throw corrupt(snapshot, "has part " + file + " whose sha256 does not match the manifest");
      }
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  static SandboxConfig savedConfig(JsonNode m, String name) {
    JsonNode c = m.path("config");
    SandboxConfig.Builder b =
        SandboxConfig.builder()
            .backend(c.path("backend").asText("docker"))
            .image(c.path("image").asText())
            .cpus(c.path("cpus").asDouble())
            .memoryBytes(c.path("memory_bytes").asLong())
            .pidsLimit(c.path("pids_limit").asInt())
            .tmpSizeBytes(c.path("tmp_bytes").asLong())
            .workspaceSizeBytes(c.path("workspace_bytes").asLong())
            .maxOutputBytes(c.path("max_output_bytes").asLong())
            .user(c.path("user").asText());
    if (c.hasNonNull("runtime")) {
      b.runtime(c.path("runtime").asText());
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = c.path("env").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      b.env(e.getKey(), e.getValue().asText());
    }
    JsonNode n = c.path("network");
    if (n.isObject()) {
      NetworkPolicy.Builder nb = NetworkPolicy.builder();
      n.path("allow").forEach(r -> nb.allow(r.asText()));
      n.path("allow_addresses").forEach(r -> nb.allowAddress(r.asText()));
      b.network(nb.build());
    }
    try {
      if (c.has("workdir")) {
        b.redactCredentials(c.path("redact_credentials").asBoolean(true))
            .workdir(c.path("workdir").asText())
            .execTimeout(Duration.ofMillis(c.path("exec_timeout_ms").asLong()))
            .startTimeout(Duration.ofMillis(c.path("start_timeout_ms").asLong()))
            .ttl(Duration.ofMillis(c.path("ttl_ms").asLong()))
            .readOnlyRootFilesystem(c.path("read_only_root").asBoolean(true))
            .readOnlyWorkspace(c.path("read_only_workspace").asBoolean(false));
        for (Iterator<Map.Entry<String, JsonNode>> it = c.path("labels").fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          b.label(e.getKey(), e.getValue().asText());
        }
        if (c.hasNonNull("seccomp_profile")) {
          b.seccompProfile(c.path("seccomp_profile").asText());
        }
        JsonNode ap = c.path("approvals");
        io.agentnest.ApprovalPolicy.Builder a =
            io.agentnest.ApprovalPolicy.builder()
                .fileDeletion(action(ap.path("file_deletion")))
                .systemModification(action(ap.path("system_modification")))
                .timeout(Duration.ofMillis(ap.path("timeout_ms").asLong(60_000)));
        ap.path("shell").forEach(r -> a.shell(r.path("regex").asText(), action(r.path("action"))));
        for (Iterator<Map.Entry<String, JsonNode>> it = ap.path("python").fields();
            it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          a.python(e.getKey(), action(e.getValue()));
        }
        if (ap.has("writable_paths")) {
          List<String> paths = new ArrayList<>();
          ap.path("writable_paths").forEach(x -> paths.add(x.asText()));
          a.writablePaths(paths);
        }
        b.approvals(a.build());
      }
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new SnapshotException(
          SnapshotException.Reason.CORRUPT,
          "snapshot '" + name + "' holds a config this version refuses: " + e.getMessage());
    } catch (io.agentnest.ConfigException e) {
      throw new SnapshotException(
          SnapshotException.Reason.CORRUPT,
          "snapshot '" + name + "' holds a config this version refuses: " + e.getMessage());
    }
  }

  private static io.agentnest.ApprovalPolicy.Action action(JsonNode n) {
    return io.agentnest.ApprovalPolicy.Action.valueOf(n.asText("ALLOW"));
  }

  /** A verified manifest and the directory of its parts. */
  record Loaded(JsonNode manifest, Path dir) {
    /** The part of {@code kind} (workspace, tmp), or null. */
    @Nullable JsonNode part(String kind) {
      for (JsonNode p : manifest.path("parts")) {
        if (p.path("kind").asText().equals(kind)) {
          return p;
        }
      }
      return null;
    }

    /** All parts read into memory, each verified (tests and small snapshots). */
    SandboxState.Captured state() {
      byte[] ws = new byte[0];
      byte[] tmp = new byte[0];
      List<SandboxState.Session> sessions = new ArrayList<>();
      for (JsonNode p : manifest.path("parts")) {
        if (p.path("kind").asText().equals("memory")) {
          continue; // a checkpoint image: only the runtime reads it
        }
        byte[] data = readPart(dir, p);
        switch (p.path("kind").asText()) {
          case "workspace" -> ws = data;
          case "tmp" -> tmp = data;
          default -> {
            JsonNode meta = p.path("meta");
            List<String> vars = new ArrayList<>();
            meta.path("variables").forEach(v -> vars.add(v.asText()));
            List<ForkReport.Skipped> skipped = new ArrayList<>();
            meta.path("skipped")
                .forEach(
                    x ->
                        skipped.add(
                            new ForkReport.Skipped(
                                x.path("session").asText(),
                                x.path("name").asText(),
                                x.path("type").asText(),
                                x.path("reason").asText())));
            sessions.add(
                new SandboxState.Session(
                    meta.path("session").asText(),
                    data,
                    meta.path("extra_bytes").asLong(),
                    vars,
                    skipped));
          }
        }
      }
      return new SandboxState.Captured(ws, tmp, sessions);
    }
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
    JsonNode signed;
    try {
      if (Files.size(mf) > MAX_MANIFEST_BYTES) {
        throw corrupt(name, "has a manifest larger than " + MAX_MANIFEST_BYTES + " bytes");
      }
      byte[] bytes;
      try (InputStream in = Files.newInputStream(mf, LinkOption.NOFOLLOW_LINKS)) {
        bytes = in.readNBytes((int) MAX_MANIFEST_BYTES + 1);
      }
      if (bytes.length > MAX_MANIFEST_BYTES) {
        throw corrupt(name, "has a manifest larger than " + MAX_MANIFEST_BYTES + " bytes");
      }
      signed = Json.MAPPER.readTree(bytes);
    } catch (IOException e) {
      throw corrupt(
          name,
          "has an unreadable manifest (" + Bounded.text(String.valueOf(e.getMessage()), 300) + ")");
    }
    JsonNode m = signed == null ? null : signed.get("manifest");
    if (m == null || !m.isObject() || !signed.path("hmac_sha256").isTextual()) {
      throw corrupt(name, "has a manifest without a signature");
    }
    String expected;
    try {
      expected = hmac(Json.MAPPER.writeValueAsBytes(m));
    } catch (IOException e) {
      throw corrupt(name, "has a manifest that cannot be re-encoded");
    }
    if (!MessageDigest.isEqual(
        expected.getBytes(StandardCharsets.US_ASCII),
        signed.path("hmac_sha256").asText().getBytes(StandardCharsets.US_ASCII))) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "snapshot '"
              + name
              + "' was modified after it was saved (its manifest signature does not match this"
              + " installation's key "
              + keyFile()
              + "): it is refused; remove it ('agentnest snapshot rm "
              + name
              + "') and take a new snapshot");
    }
    if (m.path("format").asInt() != FORMAT || !name.equals(m.path("name").asText())) {
      throw corrupt(name, "has format " + m.path("format") + " or another name");
    }
    java.util.Set<String> files = new java.util.HashSet<>();
    int sessions = 0;
    int memory = 0;
    if (!m.path("parts").isArray()
        || m.path("parts").size() > SandboxState.MAX_SESSIONS + 2 + MAX_MEMORY_PARTS) {
      throw corrupt(name, "has no list of parts, or too many parts");
    }
    for (JsonNode p : m.path("parts")) {
      String file = p.path("file").asText();
      String kind = p.path("kind").asText();
      boolean ok =
          switch (kind) {
            case "workspace" -> file.equals("workspace.tar");
            case "tmp" -> file.equals("tmp.tar");
            case "session" ->
                file.matches("session-[0-9]{1,4}\\.bin")
                    && ++sessions <= SandboxState.MAX_SESSIONS
                    && SandboxState.validSessionName(p.path("meta").path("session").asText());
            case "memory" -> validMemoryFile(file) && ++memory <= MAX_MEMORY_PARTS;
            default -> false;
          };
      if (!ok || !files.add(file)) {
        throw corrupt(name, "lists a part with a bad kind or file name");
      }
    }
    if (!m.path("memory").isBoolean() || m.path("memory").asBoolean() != (memory > 0)) {
      throw corrupt(
          name, "says memory=" + m.path("memory") + " but lists " + memory + " memory parts");
    }
    if (latestOnly) {
      try {
        index().checkLatest(name, m, signed.path("hmac_sha256").asText());
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
        keyFile().resolveSibling("snapshot.index"), this::hmac, this::adoptable);
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
        if (n.startsWith(".") || !NAME.matcher(n).matches()) {
          continue;
        }
        try {
          JsonNode m = load(n, false).manifest;
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

  /** Checks every part against the manifest (present, size, sha256) before anything is used. */
  static void verifyParts(Loaded l) {
    String name = l.manifest.path("name").asText();
    byte[] buf = new byte[1 << 16];
    for (JsonNode p : l.manifest.path("parts")) {
      String file = p.path("file").asText();
      try {
        Path f = checkPartFile(l.dir, p, name);
        MessageDigest sha = HostFiles.newSha256();
        long left = p.path("size").asLong();
        try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
          while (left > 0) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (n < 0) {
              throw corrupt(name, "has part " + file + " that is shorter than the manifest says");
            }
            sha.update(buf, 0, n);
            left -= n;
          }
        }
        if (!HexFormat.of().formatHex(sha.digest()).equals(p.path("sha256").asText())) {
          throw corrupt(name, "has part " + file + " whose sha256 does not match the manifest");
        }
      } catch (IOException e) {
        throw corrupt(name, "has an unreadable part " + file + ": " + e.getMessage());
      }
    }
  }

  /** The part's file, if it is a regular file of the manifest's size within the caps. */
  static Path checkPartFile(Path dir, JsonNode p, String name) throws IOException {
    String file = p.path("file").asText();
    Path f = dir.resolve(file);
    long size = p.path("size").asLong(-1);
    long cap =
        switch (p.path("kind").asText()) {
          case "session" -> SandboxState.MAX_STATE_BYTES;
          case "memory" -> MAX_MEMORY_BYTES;
          default -> SandboxState.MAX_FILES_BYTES;
        };
    // Every directory between the snapshot's and the part's is a real one, never a symlink.
    for (Path d = f.getParent(); d != null && !d.equals(dir); d = d.getParent()) {
      if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
        throw corrupt(
            name, "has part " + file + " in " + dir.relativize(d) + ", which is not a directory");
      }
    }
    if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
      throw corrupt(name, "is missing its part " + file + " (or it is not a regular file)");
    }
    long actual = Files.size(f);
    if (size < 0 || size > cap || actual != size) {
      throw corrupt(
          name, "has part " + file + " of " + actual + " bytes, the manifest says " + size);
    }
    return f;
  }

  /** One part in memory, verified (session states, which go into the sandbox as one array). */
  static byte[] readPart(Path dir, JsonNode p) {
    String file = p.path("file").asText();
    String name = dir.getFileName().toString();
    try {
      Path f = checkPartFile(dir, p, name);
      long size = p.path("size").asLong();
      if (size > SandboxState.MAX_STATE_BYTES) {
        throw corrupt(name, "has part " + file + " too large to read into memory");
      }
      byte[] data;
      try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
        data = in.readNBytes((int) size);
      }
      if (data.length != size || !sha256(data).equals(p.path("sha256").asText())) {
        throw corrupt(name, "has part " + file + " whose sha256 does not match the manifest");
      }
      return data;
    } catch (IOException e) {
      throw corrupt(name, "has an unreadable part " + file + ": " + e.getMessage());
    }
  }

  private static SnapshotException corrupt(String name, String why) {
    return new SnapshotException(
        SnapshotException.Reason.CORRUPT,
        "snapshot '"
            + name
            + "' "
            + why
            + ": it is refused; remove it ('agentnest snapshot rm "
            + name
            + "') and take a new snapshot");
  }

  // ------------------------------------------------------------------------- list, remove

  /** Valid snapshots, newest first; ones that fail verification are left out. */
  public List<SnapshotInfo> list() {
    List<SnapshotInfo> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path d : ds) {
        String n = d.getFileName().toString();
        if (n.startsWith(".") || !NAME.matcher(n).matches()) {
          continue;
        }
        try {
          out.add(info(load(n).manifest));
        } catch (SnapshotException e) {
          // listed by 'verify', not here
        }
      }
    } catch (IOException e) {
      throw new SnapshotException(
          SnapshotException.Reason.IO, "cannot read " + root + ": " + e.getMessage());
    }
    out.sort(Comparator.comparing(SnapshotInfo::created).reversed());
    return out;
  }

  /** The id of the sandbox a snapshot was taken of, if its manifest verifies. */
  public java.util.Optional<String> sourceSandbox(String name) {
    try {
      JsonNode m = load(name).manifest;
      return m.hasNonNull("sandbox")
          ? java.util.Optional.of(m.path("sandbox").asText())
          : java.util.Optional.empty();
    } catch (SnapshotException e) {
      return java.util.Optional.empty();
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
  static final Duration LEFTOVER_AGE = Duration.ofHours(1);

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

  static SnapshotInfo info(JsonNode m) {
    List<String> sessions = new ArrayList<>();
    for (JsonNode p : m.path("parts")) {
      if (p.path("kind").asText().equals("session")) {
        sessions.add(p.path("meta").path("session").asText());
      }
    }
    return new SnapshotInfo(
        m.path("name").asText(),
        Instant.parse(m.path("created").asText("1970-01-01T00:00:00Z")),
        m.path("image").asText(),
        m.path("image_id").asText(),
        m.hasNonNull("runtime") ? m.path("runtime").asText() : null,
        m.path("bytes").asLong(),
        sessions,
        m.path("memory").asBoolean(),
        m.path("memory_note").asText(""),
        savedConfig(m, m.path("name").asText()));
  }

  // ---------------------------------------------------------------------------- crypto

  Path keyFile() {
    Path parent = root.getParent();
    return (parent == null ? root : parent).resolve("snapshot.key");
  }

  /**
   * This installation's key: 32 random bytes in {@code snapshot.key}, made on first use with mode
   * 0600 (published with a hard link, so two processes racing to make it agree on one). A key that
   * others can read or write, or a symlink, is refused.
   */
  private byte[] key() throws IOException {
    Path k = keyFile();
    Path dir = k.getParent() == null ? root : k.getParent();
    if (!Files.exists(k, LinkOption.NOFOLLOW_LINKS)) {
      Files.createDirectories(dir);
      byte[] fresh = new byte[32];
      new SecureRandom().nextBytes(fresh);
      Path tmp = Files.createTempFile(dir, ".snapshot-key-", ".tmp");
      try {
        try {
          Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException ignored) {
          // not a POSIX file system; the directory's permissions protect it
        }
        Files.write(tmp, fresh);
        try {
          Files.createLink(k, tmp);
        } catch (java.nio.file.FileAlreadyExistsException raced) {
          // another process made it first: use theirs
        } catch (UnsupportedOperationException noLinks) {
          if (!Files.exists(k, LinkOption.NOFOLLOW_LINKS)) {
            Files.move(tmp, k);
          }
        }
      } finally {
        Files.deleteIfExists(tmp);
      }
    }
    if (!Files.isRegularFile(k, LinkOption.NOFOLLOW_LINKS)) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "the snapshot key " + k + " is not a regular file: remove it");
    }
    try {
      var perms = Files.getPosixFilePermissions(k, LinkOption.NOFOLLOW_LINKS);
      for (var bad :
          List.of(
              java.nio.file.attribute.PosixFilePermission.GROUP_READ,
              java.nio.file.attribute.PosixFilePermission.GROUP_WRITE,
              java.nio.file.attribute.PosixFilePermission.OTHERS_READ,
              java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE)) {
        if (perms.contains(bad)) {
          throw new SnapshotException(
              SnapshotException.Reason.TAMPERED,
              "the snapshot key "
                  + k
                  + " can be read or written by other users, who could forge snapshots:"
                  + " 'chmod 600 "
                  + k
                  + "', and remove snapshots you did not take");
        }
      }
    } catch (UnsupportedOperationException ignored) {
      // not a POSIX file system
    }
    byte[] key;
    try (InputStream in = Files.newInputStream(k, LinkOption.NOFOLLOW_LINKS)) {
      key = in.readNBytes(4096);
    }
    if (key.length < 32) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "the snapshot key "
              + k
              + " is too short: remove it (existing snapshots"
              + " then fail verification) or restore it from a backup");
    }
    return key;
  }

  String hmac(byte[] body) throws IOException {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key(), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(body));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sha256(byte[] data) {
    return HexFormat.of().formatHex(HostFiles.newSha256().digest(data));
  }
}
