package io.agentnest.spi.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Refuses writes that would take a filesystem's free space below a reserve, so that what AgentNest
 * writes on behalf of sandboxes (audit records, snapshots) can never fill the host's disk. Free
 * space is probed when the estimate (last probe minus what was written since) comes near the
 * reserve, after every {@code refreshBytes} written and after {@code refreshNanos}: cheap on a
 * roomy disk, exact near the limit, and it notices other writers within the refresh time.
 *
 * <p>Thread-safe. The probe is injectable, so that tests need no full disk.
 */
public final class DiskGuard {
  /** Usable bytes on the filesystem holding a path. */
  @FunctionalInterface
  public interface FreeSpace {
    long usableBytes(Path path) throws IOException;
  }

  /** The real filesystem's usable space (what an unprivileged writer may still use). */
  public static final FreeSpace FILESYSTEM = DiskGuard::usableOnFilesystemOf;

  /**
   * Free bytes on the filesystem that holds, or will hold, {@code path}: a directory not made yet
   * (a fresh AGENTNEST_HOME's audit directory, checked before the first sandbox) is measured on its
   * nearest existing ancestor, where it will be created.
   */
  static long usableOnFilesystemOf(Path path) throws IOException {
    Path p = path.toAbsolutePath();
    while (p != null && !Files.exists(p)) {
      p = p.getParent();
    }
    if (p == null) {
      throw new NoSuchFileException(path.toString());
    }
    // One statvfs: Files.getFileStore reads the whole mount table first, a third of a millisecond
    // on every pooled hand-out. File says 0 for an error too; the file store then tells which.
    long usable = p.toFile().getUsableSpace();
    return usable > 0 ? usable : Files.getFileStore(p).getUsableSpace();
  }

  private static final long REFRESH_BYTES = 4L << 20;
  private static final long REFRESH_NANOS = 1_000_000_000L;

  private final Path path;
  private final long reserve;
  private final FreeSpace probe;
  private final String what;
  private final String fix;
  private final long refreshBytes;
  private final long refreshNanos;
  private long free = -1;
  private long written;
  private long probedAt;

  /**
   * @param path a file or directory on the filesystem to watch
   * @param reserveBytes free space that must remain
   * @param what what is refused, for the message ("the audit log in /x")
   * @param fix what the user can do about it, for the message
   */
  public DiskGuard(Path path, long reserveBytes, FreeSpace probe, String what, String fix) {
    this(path, reserveBytes, probe, what, fix, REFRESH_BYTES, REFRESH_NANOS);
  }

  /** As above, probing after {@code refreshBytes} written or {@code refreshNanos} passed. */
  public DiskGuard(
      Path path,
      long reserveBytes,
      FreeSpace probe,
      String what,
      String fix,
      long refreshBytes,
      long refreshNanos) {
    this.path = path;
    this.reserve = Math.max(0, reserveBytes);
    this.probe = probe;
    this.what = what;
    this.fix = fix;
    this.refreshBytes = refreshBytes;
    this.refreshNanos = refreshNanos;
  }

  public long reserveBytes() {
    return reserve;
  }

  /**
   * Call before writing {@code n} bytes; throws when that would leave less than the reserve.
   *
   * @throws DiskFullException naming the filesystem, the free space, the reserve and the fix
   */
  public synchronized void beforeWrite(long n) throws DiskFullException {
    long now = System.nanoTime();
    boolean stale =
        free < 0
            || written >= refreshBytes
            || now - probedAt >= refreshNanos
            || free - written - n < reserve + 2 * refreshBytes;
    if (stale) {
      try {
        free = probe.usableBytes(path);
      } catch (IOException e) {
        throw new DiskFullException(
            what + ": cannot tell how much disk space is free (" + e.getMessage() + "); " + fix);
      }
      written = 0;
      probedAt = now;
    }
    if (free - written - n < reserve) {
      throw new DiskFullException(
          what
              + ": only "
              + human(Math.max(0, free - written))
              + " free on the filesystem of "
              + path
              + ", below the reserve of "
              + human(reserve)
              + "; "
              + fix);
    }
    written += n;
  }

  /** Whether at least the reserve is free now (a fresh probe). */
  public synchronized boolean hasRoom() {
    try {
      free = probe.usableBytes(path);
      written = 0;
      probedAt = System.nanoTime();
      return free >= reserve;
    } catch (IOException e) {
      return false;
    }
  }

  static String human(long bytes) {
    if (bytes >= 1L << 30) {
      return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
    }
    if (bytes >= 1L << 20) {
      return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
    }
    return bytes + " bytes";
  }

  /** A write refused because the disk is (nearly) full; the message says what to do. */
  public static final class DiskFullException extends IOException {
    private static final long serialVersionUID = 1L;

    public DiskFullException(String message) {
      super(message);
    }
  }
}
