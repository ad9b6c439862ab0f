package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.secrets.SecretScan;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.spi.support.DiskGuard;
import io.agentnest.spi.support.HostFiles;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The parts of a snapshot (workspace and /tmp tars, pickled sessions, checkpoint files): written
 * into a staging directory with their size and sha256 and a scan for secret values, and read back
 * never beyond the manifest's size, hashed again on the way.
 */
final class Parts {
  private Parts() {}

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
          new BufferedOutputStream(
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
          new BufferedInputStream(Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS), 1 << 16),
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
        throw Manifest.corrupt(
            snapshot, "has part " + file + " that changed size while it was read");
      }
      if (!HexFormat.of().formatHex(sha.digest()).equals(expected)) {
        throw Manifest.corrupt(
            snapshot, "has part " + file + " whose sha256 does not match the manifest");
      }
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  /** Checks every part against the manifest (present, size, sha256) before anything is used. */
  static void verifyAll(Loaded l) {
    String name = l.manifest().path("name").asText();
    byte[] buf = new byte[1 << 16];
    for (JsonNode p : l.manifest().path("parts")) {
      String file = p.path("file").asText();
      try {
        Path f = checkPartFile(l.dir(), p, name);
        MessageDigest sha = HostFiles.newSha256();
        long left = p.path("size").asLong();
        try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
          while (left > 0) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (n < 0) {
              throw Manifest.corrupt(
                  name, "has part " + file + " that is shorter than the manifest says");
            }
            sha.update(buf, 0, n);
            left -= n;
          }
        }
        if (!HexFormat.of().formatHex(sha.digest()).equals(p.path("sha256").asText())) {
          throw Manifest.corrupt(
              name, "has part " + file + " whose sha256 does not match the manifest");
        }
      } catch (IOException e) {
        throw Manifest.corrupt(name, "has an unreadable part " + file + ": " + e.getMessage());
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
          case "memory" -> CheckpointMemory.MAX_MEMORY_BYTES;
          default -> SandboxState.MAX_FILES_BYTES;
        };
    // Every directory between the snapshot's and the part's is a real one, never a symlink.
    for (Path d = f.getParent(); d != null && !d.equals(dir); d = d.getParent()) {
      if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
        throw Manifest.corrupt(
            name, "has part " + file + " in " + dir.relativize(d) + ", which is not a directory");
      }
    }
    if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
      throw Manifest.corrupt(
          name, "is missing its part " + file + " (or it is not a regular file)");
    }
    long actual = Files.size(f);
    if (size < 0 || size > cap || actual != size) {
      throw Manifest.corrupt(
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
        throw Manifest.corrupt(name, "has part " + file + " too large to read into memory");
      }
      byte[] data;
      try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
        data = in.readNBytes((int) size);
      }
      if (data.length != size || !SnapshotKey.sha256(data).equals(p.path("sha256").asText())) {
        throw Manifest.corrupt(
            name, "has part " + file + " whose sha256 does not match the manifest");
      }
      return data;
    } catch (IOException e) {
      throw Manifest.corrupt(name, "has an unreadable part " + file + ": " + e.getMessage());
    }
  }
}
