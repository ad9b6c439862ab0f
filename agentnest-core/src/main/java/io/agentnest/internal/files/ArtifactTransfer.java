package io.agentnest.internal.files;

import io.agentnest.Artifact;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.SandboxFiles;
import io.agentnest.WorkspacePaths;
import io.agentnest.internal.support.Bounded;
import io.agentnest.spi.support.HostFiles;
import java.io.BufferedInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileSystems;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.jspecify.annotations.Nullable;

/**
 * Files in and out of a sandbox as tar streams, checked on the host. What comes out of a sandbox is
 * hostile: every entry name is validated, only regular files and directories are written, sizes and
 * counts are capped while streaming, and hashes are computed here.
 *
 * <p>Why it is over 600 lines: export and upload are two streaming loops over hostile tar data, and
 * each keeps its checks (names, types, sizes, counts) next to the read they guard; split apart, a
 * check could be skipped without the loop showing it.
 */
public final class ArtifactTransfer {
  public static final long DEFAULT_MAX_BYTES = 1L << 30;
  public static final int DEFAULT_MAX_ENTRIES = 100_000;

  private static final String MASK = "[REDACTED:";

  private final ArchiveTransport archives;
  private final SandboxFiles files;
  private final long maxBytes;
  private final int maxEntries;

  public ArtifactTransfer(
      ArchiveTransport archives, SandboxFiles files, long maxBytes, int maxEntries) {
    this.archives = archives;
    this.files = files;
    this.maxBytes = maxBytes;
    this.maxEntries = maxEntries;
  }

  // ------------------------------------------------------------------------------------ out

  /** The regular files matching {@code glob}; refuses symlinks and special files it matches. */
  List<String> match(String glob) {
    PathMatcher m = matcher(glob);
    List<String> out = new ArrayList<>();
    for (FileInfo f : files.listRecursive("")) {
      boolean control = hasControl(f.path());
      // '**' becomes '.*', which stops at a newline: judge such a name as if it were printable,
      // so that it is refused below instead of silently left out.
      if (!m.matches(Path.of(f.path())) && !(control && m.matches(Path.of(printable(f.path()))))) {
        continue;
      }
      if (control) {
        throw new FileOperationException(
            FileOperationException.Reason.BAD_PATH,
            "'"
                + Bounded.escaped(f.path())
                + "' (shown escaped) matches '"
                + Bounded.escaped(glob)
                + "' but its name contains a control character such as a newline, which an"
                + " export does not write to the host: rename it in the sandbox (files().move,"
                + " or mv) or narrow the pattern");
      }
      if (f.path().contains(MASK)) {
        // The listing masked a secret in the name: the real name must not reach the host's disk.
        throw new FileOperationException(
            FileOperationException.Reason.SECRET_IN_NAME,
            "'"
                + Bounded.escaped(f.path())
                + "' matches '"
                + Bounded.escaped(glob)
                + "' but its name holds the value of a secret (masked here), and names that"
                + " carry secrets never leave the sandbox: rename the file in the sandbox and"
                + " export it again");
      }
      switch (f.type()) {
        case FILE -> out.add(f.path());
        case DIR -> {}
        case SYMLINK ->
            throw new FileOperationException(
                FileOperationException.Reason.SYMLINK,
                "'"
                    + Bounded.escaped(f.path())
                    + "' matches '"
                    + Bounded.escaped(glob)
                    + "' but is a symlink: artifacts are regular files only; copy the target into"
                    + " the workspace or narrow the pattern");
        case OTHER ->
            throw new FileOperationException(
                FileOperationException.Reason.NOT_A_FILE,
                "'"
                    + Bounded.escaped(f.path())
                    + "' matches but is not a regular file (a device, fifo or"
                    + " socket): narrow the pattern");
      }
      if (out.size() > maxEntries) {
        throw new FileOperationException(
            FileOperationException.Reason.TOO_MANY,
            "'" + Bounded.escaped(glob) + "' matches more than " + maxEntries + " files");
      }
    }
    return out;
  }

  static PathMatcher matcher(String glob) {
    if (glob.isBlank() || glob.startsWith("/") || glob.indexOf('\0') >= 0) {
      throw new FileOperationException(
          FileOperationException.Reason.BAD_GLOB,
          "pattern '"
              + Bounded.escaped(glob)
              + "' must be relative to the workspace, e.g. 'output/**.png'");
    }
    for (String part : glob.split("/")) {
      if (part.equals("..")) {
        throw new FileOperationException(
            FileOperationException.Reason.BAD_GLOB,
            "pattern '"
                + Bounded.escaped(glob)
                + "' contains '..': artifacts are in the workspace");
      }
    }
    try {
      return FileSystems.getDefault().getPathMatcher("glob:" + glob);
    } catch (IllegalArgumentException e) {
      throw new FileOperationException(
          FileOperationException.Reason.BAD_GLOB,
          "pattern '" + Bounded.escaped(glob) + "' is not a valid glob: " + e.getMessage());
    }
  }

  /** Lists (and hashes, from the real bytes) the files matching {@code glob}. */
  public List<Artifact> list(String glob) {
    return fetch(glob, null);
  }

  /** Copies the files matching {@code glob} into {@code hostDir}. */
  public List<Artifact> export(String glob, Path hostDir) {
    try {
      Files.createDirectories(hostDir);
    } catch (IOException e) {
      throw new FileOperationException(
          FileOperationException.Reason.HOST_IO,
          "cannot create " + hostDir + ": " + e.getMessage() + "; choose a writable dir");
    }
    return fetch(glob, hostDir);
  }

  private List<Artifact> fetch(String glob, @Nullable Path hostDir) {
    List<String> paths = match(glob);
    if (paths.isEmpty()) {
      return List.of();
    }
    Path tmp = null;
    try {
      tmp = Files.createTempFile("agentnest-artifacts-", ".tar");
      try (OutputStream o = new CappedOutputStream(Files.newOutputStream(tmp), maxBytes)) {
        archives.tarOut(SandboxArchives.WORKSPACE, paths, true, maxBytes, o);
      }
      try (InputStream in = new BufferedInputStream(Files.newInputStream(tmp))) {
        return hostDir == null
            ? readChecked(in, Set.copyOf(paths), null)
            : extract(in, Set.copyOf(paths), hostDir);
      }
    } catch (IOException e) {
      throw new FileOperationException(
          FileOperationException.Reason.HOST_IO, "artifact transfer failed: " + e.getMessage());
    } finally {
      if (tmp != null) {
        try {
          Files.deleteIfExists(tmp);
        } catch (IOException ignored) {
          // a temp file; the OS cleans it up
        }
      }
    }
  }

  /** Extracts into a staging directory inside {@code hostDir}, then moves into place. */
  List<Artifact> extract(InputStream tar, Set<String> expected, Path hostDir) throws IOException {
    Path root = hostDir.toRealPath();
    Path staging = Files.createTempDirectory(root, ".agentnest-export-");
    try {
      List<Artifact> staged = readChecked(tar, expected, staging);
      List<Artifact> out = new ArrayList<>();
      for (Artifact a : staged) {
        Path dest = root.resolve(a.path()).normalize();
        Path parent = dest.getParent();
        if (!dest.startsWith(root) || parent == null) {
          throw refused(a.path(), "leads outside the export directory");
        }
        Files.createDirectories(parent);
        if (!parent.toRealPath().startsWith(root)) {
          throw refused(a.path(), "has a symlink on its way out of the export directory");
        }
        if (Files.isSymbolicLink(dest) || Files.isDirectory(dest, LinkOption.NOFOLLOW_LINKS)) {
          throw refused(a.path(), "would replace a symlink or directory at " + dest);
        }
        Files.move(
            staging.resolve(a.path()),
            dest,
            StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.ATOMIC_MOVE);
        out.add(new Artifact(a.path(), a.size(), a.sha256(), dest));
      }
      return out;
    } finally {
      HostFiles.deleteTree(staging);
    }
  }

  /**
   * Reads a tar from a sandbox, checking every entry; writes regular files under {@code into} when
   * given. Entries not in {@code expected} (when non-null) are refused.
   */
  List<Artifact> readChecked(InputStream tar, @Nullable Set<String> expected, @Nullable Path into)
      throws IOException {
    List<Artifact> out = new ArrayList<>();
    EntryRules rules = new EntryRules(maxBytes, maxEntries, false);
    try (TarArchiveInputStream t = new TarArchiveInputStream(tar)) {
      TarArchiveEntry e;
      while ((e = t.getNextEntry()) != null) {
        String name = rules.check(e);
        if (e.isDirectory()) {
          if (into != null) {
            Files.createDirectories(into.resolve(name));
          }
          continue;
        }
        if (expected != null && !expected.contains(name)) {
          throw refused(name, "was not asked for (the sandbox sent an entry of its own)");
        }
        MessageDigest sha = HostFiles.newSha256();
        long size;
        if (into != null) {
          Path dest = into.resolve(name).normalize();
          if (!dest.startsWith(into)) {
            throw refused(name, "leads outside the target directory");
          }
          Files.createDirectories(Objects.requireNonNull(dest.getParent()));
          try (OutputStream o =
              new DigestOutputStream(
                  Files.newOutputStream(
                      dest, StandardOpenOption.CREATE_NEW, LinkOption.NOFOLLOW_LINKS),
                  sha)) {
            size = rules.copy(t, o);
          }
        } else {
          size = rules.copy(t, new DigestOutputStream(OutputStream.nullOutputStream(), sha));
        }
        out.add(new Artifact(name, size, HexFormat.of().formatHex(sha.digest()), null));
      }
    }
    return out;
  }

  // ------------------------------------------------------------------------------------- in

  /** Copies a host file or directory to {@code sandboxPath}. */
  public List<Artifact> upload(Path hostPath, String sandboxPath) {
    String dest = WorkspacePaths.checkEntry(sandboxPath);
    if (!Files.exists(hostPath, LinkOption.NOFOLLOW_LINKS)) {
      throw new FileOperationException(
          FileOperationException.Reason.NOT_FOUND, "no such host file or directory: " + hostPath);
    }
    Path tmp = null;
    try {
      tmp = Files.createTempFile("agentnest-upload-", ".tar");
      List<Artifact> sent;
      String sub;
      try (TarArchiveOutputStream t =
          new TarArchiveOutputStream(Files.newOutputStream(tmp), "UTF-8")) {
        t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        t.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        if (Files.isDirectory(hostPath, LinkOption.NOFOLLOW_LINKS)) {
          sub = dest;
          sent = tarTree(hostPath, t);
        } else {
          int slash = dest.lastIndexOf('/');
          sub = slash < 0 ? "" : dest.substring(0, slash);
          sent = new ArrayList<>();
          sent.add(tarFile(hostPath, dest.substring(slash + 1), t, new long[] {0}));
        }
      }
      try (InputStream in = new BufferedInputStream(Files.newInputStream(tmp))) {
        archives.tarIn(SandboxArchives.WORKSPACE, sub, in, true, maxBytes);
      }
      List<Artifact> out = new ArrayList<>();
      for (Artifact a : sent) {
        out.add(
            new Artifact(
                sub.isEmpty() ? a.path() : sub + "/" + a.path(), a.size(), a.sha256(), null));
      }
      return out;
    } catch (IOException e) {
      throw new FileOperationException(
          FileOperationException.Reason.HOST_IO,
          "upload of " + hostPath + " failed: " + e.getMessage());
    } finally {
      if (tmp != null) {
        try {
          Files.deleteIfExists(tmp);
        } catch (IOException ignored) {
          // a temp file
        }
      }
    }
  }

  private List<Artifact> tarTree(Path dir, TarArchiveOutputStream t) throws IOException {
    Path root = dir.toRealPath();
    List<Artifact> out = new ArrayList<>();
    long[] total = {0};
    Files.walkFileTree(
        dir,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs)
              throws IOException {
            String rel = rel(dir, d);
            if (!rel.isEmpty()) {
              TarArchiveEntry e = new TarArchiveEntry(rel + "/");
              e.setMode(0755);
              t.putArchiveEntry(e);
              t.closeArchiveEntry();
            }
            return FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
            String rel = rel(dir, f);
            if (attrs.isSymbolicLink()) {
              Path target =
                  Objects.requireNonNull(f.getParent())
                      .resolve(Files.readSymbolicLink(f))
                      .normalize();
              Path real = Files.exists(target) ? target.toRealPath() : target;
              if (Files.readSymbolicLink(f).isAbsolute() || !real.startsWith(root)) {
                throw refused(
                    rel,
                    "is a symlink pointing outside the uploaded directory ("
                        + Files.readSymbolicLink(f)
                        + "): upload the target itself");
              }
              TarArchiveEntry e = new TarArchiveEntry(rel, TarArchiveEntry.LF_SYMLINK);
              e.setLinkName(Files.readSymbolicLink(f).toString());
              t.putArchiveEntry(e);
              t.closeArchiveEntry();
              return FileVisitResult.CONTINUE;
            }
            if (!attrs.isRegularFile()) {
              throw refused(rel, "is not a regular file (a device, fifo or socket)");
            }
            out.add(tarFile(f, rel, t, total));
            if (out.size() > maxEntries) {
              throw new FileOperationException(
                  FileOperationException.Reason.TOO_MANY,
                  dir + " has more than " + maxEntries + " files");
            }
            return FileVisitResult.CONTINUE;
          }
        });
    return out;
  }

  private Artifact tarFile(Path f, String name, TarArchiveOutputStream t, long[] total)
      throws IOException {
    long size = Files.size(f);
    total[0] += size;
    if (total[0] > maxBytes) {
      throw new FileOperationException(
          FileOperationException.Reason.TOO_LARGE,
          "the upload is larger than the cap of " + maxBytes + " bytes");
    }
    TarArchiveEntry e = new TarArchiveEntry(name);
    e.setSize(size);
    e.setMode(Files.isExecutable(f) ? 0755 : 0644);
    t.putArchiveEntry(e);
    MessageDigest sha = HostFiles.newSha256();
    try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
      // Exactly the size declared in the header, even if the file grows meanwhile.
      long n = new DigestOutputStreamCopier(sha).copy(in, t, size);
      if (n != size) {
        throw new IOException(f + " shrank while being read");
      }
    }
    t.closeArchiveEntry();
    return new Artifact(name, size, HexFormat.of().formatHex(sha.digest()), null);
  }

  /** Checks a host tar on the host before sending it into the sandbox. */
  public List<Artifact> uploadArchive(Path tarFile, String sandboxPath) {
    String sub = WorkspacePaths.check(sandboxPath);
    List<Artifact> out = new ArrayList<>();
    EntryRules rules = new EntryRules(maxBytes, maxEntries, true);
    try {
      try (TarArchiveInputStream t =
          new TarArchiveInputStream(new BufferedInputStream(Files.newInputStream(tarFile)))) {
        TarArchiveEntry e;
        while ((e = t.getNextEntry()) != null) {
          String name = rules.check(e);
          if (EntryRules.regular(e)) {
            MessageDigest sha = HostFiles.newSha256();
            long size = rules.copy(t, new DigestOutputStream(OutputStream.nullOutputStream(), sha));
            out.add(
                new Artifact(
                    sub.isEmpty() ? name : sub + "/" + name,
                    size,
                    HexFormat.of().formatHex(sha.digest()),
                    null));
          }
        }
      }
      try (InputStream in = new BufferedInputStream(Files.newInputStream(tarFile))) {
        archives.tarIn(SandboxArchives.WORKSPACE, sub, in, true, maxBytes);
      }
      return out;
    } catch (IOException e) {
      throw new FileOperationException(
          FileOperationException.Reason.BAD_ARCHIVE,
          "cannot read " + tarFile + " as a tar archive: " + e.getMessage());
    }
  }

  // ------------------------------------------------------------------------------- rules

  /** The checks every archive entry passes, in both directions. */
  static final class EntryRules {
    private final long maxBytes;
    private final int maxEntries;
    private final boolean allowInsideSymlinks;
    private final Set<String> seen = new HashSet<>();
    private final Set<String> symlinks = new LinkedHashSet<>();
    private long bytes;
    private int entries;

    EntryRules(long maxBytes, int maxEntries, boolean allowInsideSymlinks) {
      this.maxBytes = maxBytes;
      this.maxEntries = maxEntries;
      this.allowInsideSymlinks = allowInsideSymlinks;
    }

    String check(TarArchiveEntry e) {
      String raw = e.getName();
      if (raw.startsWith("/")) {
        throw refused(raw, "is an absolute name (tar-slip)");
      }
      String name;
      try {
        // "./", the first entry of every `tar -C dir -cf x.tar .`: the destination itself, which
        // exists; as a directory entry it is nothing to write (as a file it stays refused).
        if (e.isDirectory() && WorkspacePaths.check(raw).isEmpty()) {
          return "";
        }
        name = WorkspacePaths.checkEntry(raw);
      } catch (FileOperationException ex) {
        throw refused(raw, "is not a safe relative name: " + ex.getMessage());
      }
      if (++entries > maxEntries) {
        throw new FileOperationException(
            FileOperationException.Reason.TOO_MANY,
            "the archive has more than " + maxEntries + " entries");
      }
      String key = Normalizer.normalize(name, Normalizer.Form.NFC).toLowerCase(Locale.ROOT);
      if (!seen.add(key)) {
        throw refused(
            raw, "collides with another entry (the same name after Unicode normalisation or case)");
      }
      for (String link : symlinks) {
        if (name.startsWith(link + "/")) {
          throw refused(raw, "would be written through the symlink '" + link + "'");
        }
      }
      if (e.isLink()) {
        throw refused(
            raw, "is a hard link to '" + Bounded.escaped(e.getLinkName()) + "': not accepted");
      }
      if (e.isSymbolicLink()) {
        String target = e.getLinkName();
        if (!allowInsideSymlinks) {
          throw refused(raw, "is a symlink: only regular files and directories are accepted");
        }
        if (target.startsWith("/") || escapes(name, target)) {
          throw refused(raw, "is a symlink pointing outside ('" + Bounded.escaped(target) + "')");
        }
        symlinks.add(name);
        return name;
      }
      if (!regular(e) && !e.isDirectory()) {
        throw refused(raw, "is a device, fifo or other special file");
      }
      if (e.getSize() < 0 || (bytes += e.getSize()) > maxBytes) {
        throw new FileOperationException(
            FileOperationException.Reason.TOO_LARGE,
            "the archive holds more than the cap of " + maxBytes + " bytes");
      }
      return name;
    }

    /** Only these flags are regular files; commons-compress's isFile() is more lenient. */
    static boolean regular(TarArchiveEntry e) {
      byte f = e.getLinkFlag();
      return (f == TarArchiveEntry.LF_NORMAL
              || f == TarArchiveEntry.LF_OLDNORM
              || f == TarArchiveEntry.LF_CONTIG)
          && !e.getName().endsWith("/");
    }

    /** Copies one entry's bytes, counting against the cap while streaming. */
    long copy(InputStream in, OutputStream out) throws IOException {
      byte[] buf = new byte[64 << 10];
      long n = 0;
      int r;
      while ((r = in.read(buf)) > 0) {
        n += r;
        if (n > maxBytes) {
          throw new FileOperationException(
              FileOperationException.Reason.TOO_LARGE,
              "an entry is larger than the cap of " + maxBytes + " bytes");
        }
        out.write(buf, 0, r);
      }
      out.flush();
      return n;
    }

    static boolean escapes(String name, String target) {
      int depth = name.split("/").length - 1;
      for (String part : target.split("/")) {
        if (part.equals("..")) {
          depth--;
        } else if (!part.isEmpty() && !part.equals(".")) {
          depth++;
        }
        if (depth < 0) {
          return true;
        }
      }
      return false;
    }
  }

  /** Copies exactly {@code size} bytes while hashing them. */
  private record DigestOutputStreamCopier(MessageDigest sha) {
    long copy(InputStream in, OutputStream out, long size) throws IOException {
      byte[] buf = new byte[64 << 10];
      long n = 0;
      while (n < size) {
        int r = in.read(buf, 0, (int) Math.min(buf.length, size - n));
        if (r < 0) {
          break;
        }
        sha.update(buf, 0, r);
        out.write(buf, 0, r);
        n += r;
      }
      return n;
    }
  }

  /** Fails once more than {@code cap} bytes are written. */
  static final class CappedOutputStream extends FilterOutputStream {
    private final long cap;
    private long written;

    CappedOutputStream(OutputStream out, long cap) {
      super(out);
      this.cap = cap;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      written += len;
      if (written > cap + (1 << 20)) {
        throw new FileOperationException(
            FileOperationException.Reason.TOO_LARGE,
            "the export is larger than the cap of " + cap + " bytes");
      }
      out.write(b, off, len);
    }
  }

  private static FileOperationException refused(String name, String why) {
    return new FileOperationException(
        FileOperationException.Reason.ARCHIVE_REFUSED,
        "refused archive entry '" + Bounded.escaped(name) + "': it " + why);
  }

  private static String rel(Path base, Path p) {
    return base.relativize(p).toString().replace('\\', '/');
  }

  private static boolean hasControl(String s) {
    return s.chars().anyMatch(c -> c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0));
  }

  private static String printable(String s) {
    StringBuilder b = new StringBuilder(s.length());
    s.chars().forEach(c -> b.append(hasControl(String.valueOf((char) c)) ? '_' : (char) c));
    return b.toString();
  }
}
