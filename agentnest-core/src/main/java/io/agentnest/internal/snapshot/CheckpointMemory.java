package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.context.SandboxStarts;
import io.agentnest.internal.support.Bounded;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A checkpoint of the sandbox's memory (gVisor, a microVM guest's migration stream) as part of a
 * snapshot: taking it while saving (the image's files become parts of kind {@code memory}), the
 * note a manifest carries about process memory, and placing the verified memory parts where the
 * runtime reads them on restore.
 */
final class CheckpointMemory {
  private CheckpointMemory() {}

  /** The subdirectory of a snapshot holding a checkpoint image (parts of kind memory). */
  static final String MEMORY_DIR = "memory";

  /**
   * Files of a checkpoint image (runsc 2022-12 writes one, checkpoint.img; a microVM guest three:
   * its migration stream, its workspace disk and what it was started with).
   */
  static final int MAX_MEMORY_PARTS = 64;

  /** All memory parts together; a sandbox's memory is capped far lower by its config. */
  static final long MAX_MEMORY_BYTES = 16L << 30;

  private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");

  private static final Logger LOG = LoggerFactory.getLogger(CheckpointMemory.class);

  static boolean gvisor(@Nullable String runtime) {
    return runtime != null && (runtime.contains("gvisor") || runtime.contains("runsc"));
  }

  /**
   * Where the backend checkpoints memory, checkpoints the sandbox (it stops for the checkpoint and
   * runs on from it at once) and adds the checkpoint image's files as parts of kind {@code memory}.
   * Leaves the note on {@code w} when it cannot.
   */
  static void capture(
      RuntimeBackend backend,
      SandboxContext sb,
      SandboxConfig config,
      boolean ownHandle,
      String name,
      Parts.Staging w)
      throws IOException {
    if (!backend.checkpointsMemory(config)) {
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
      done = backend.checkpointTo(sb.id(), dir, channel::suspend, channel::resume);
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

  static final String NOTE_CAPTURED =
      "process memory captured: a checkpoint of the whole sandbox (every process with its memory,"
          + " threads, open files and generators, and /tmp and /workspace); restored where the"
          + " backend can (gVisor where the Docker engine's root directory is writable, a microVM"
          + " guest of the same image), elsewhere the files and pickled Python sessions also saved"
          + " are restored instead";

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
      "process memory not captured: the backend cannot checkpoint this sandbox here (gVisor"
          + " checkpoints need an experimental dockerd on this host whose root directory this"
          + " process can write, i.e. run as root: see 'agentnest doctor'; a microVM guest made"
          + " by an earlier version is not checkpointed); Python sessions are carried as pickled"
          + " namespaces, other processes are not kept";

  static String memoryNote(@Nullable String runtime) {
    return gvisor(runtime)
        ? NOTE_NO_ENGINE
        : "process memory not captured: runc checkpoints need CRIU, which does not work on every"
            + " kernel; Python sessions are carried as pickled namespaces, other processes are"
            + " not kept";
  }

  static final String NO_ENGINE_RESTORE =
      "the backend cannot restore this checkpoint here (gVisor restores need an experimental"
          + " dockerd on this host whose root directory this process can write, i.e. run as root;"
          + " a microVM checkpoint restores only on the microvm backend: see 'agentnest doctor')";

  /**
   * Starts a sandbox from the snapshot's checkpoint image: the verified memory parts are copied
   * into a private directory, hashed again there, and the backend starts a new sandbox from them,
   * whose agent runs already. Null when the backend cannot restore a checkpoint here. The private
   * directory lies beside the key, not in the store, where a writer of the store could swap it.
   */
  static @Nullable SandboxContext restore(
      RuntimeBackend backend,
      Path privateDir,
      Loaded l,
      SandboxConfig config,
      SandboxStarts starts) {
    String name = l.manifest().path("name").asText();
    Path tmp;
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
      for (JsonNode p : l.manifest().path("parts")) {
        if (p.path("kind").asText().equals("memory")) {
          placeMemoryPart(l.dir(), p, name, tmp);
        }
      }
      return starts.fromCheckpoint(backend, config, tmp).orElse(null);
    } catch (IOException e) {
      throw Manifest.corrupt(name, "has an unreadable memory part: " + e.getMessage());
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
      throw Manifest.corrupt(name, "lists a part with a bad kind or file name");
    }
    Path src = Parts.checkPartFile(dir, p, name);
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
      throw Manifest.corrupt(
          name, "has part " + file + " whose sha256 does not match the manifest");
    }
  }

  /**
   * Copies at most {@code max} bytes (a part that grew meanwhile is not copied whole), keeping
   * holes: a guest's workspace disk is mostly unwritten.
   */
  private static void copyAtMost(Path src, Path dst, long max) throws IOException {
    HostFiles.copySparse(src, dst, max);
  }
}
