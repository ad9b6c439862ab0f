package io.agentnest.docker.internal;

import com.github.dockerjava.api.command.InspectContainerResponse;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * The per-sandbox bulk-link directories under /run/agentnest/bulk: made closed to all but the
 * sandbox's user, found again from the container's label (checked against the one shape this class
 * makes, since a label is not proof), and removed with the container or by prune.
 */
final class BulkDirs {
  /** Where a sandbox sees its bulk directory (read-only); the socket in it is the host's. */
  static final String MOUNT = "/run/agentnest";

  /** The kind of a {@link ManagedResource} that is an orphaned bulk directory. */
  static final String KIND = "bulk-dir";

  private static final Path ROOT = Path.of("/run/agentnest/bulk");
  private static final Pattern NAME = Pattern.compile("/run/agentnest/bulk/[0-9a-f]{32}");
  private static final SecureRandom RANDOM = new SecureRandom();

  private final URI host;
  private volatile @Nullable Boolean usable;

  BulkDirs(URI host) {
    this.host = host;
  }

  /**
   * A fresh per-sandbox directory for the bulk link, or null where the engine is not on this host
   * (a TCP or SSH daemon: its bind mounts name the daemon's paths), /run is not writable here, or
   * the directory cannot be closed to all but the sandbox's {@code user} (see BulkDirAccess).
   */
  @Nullable Path create(String user) {
    Boolean ok = usable;
    if (ok == null) {
      ok = "unix".equals(host.getScheme()) && makeRoot();
      usable = ok;
    }
    if (!ok) {
      return null;
    }
    byte[] r = new byte[16];
    RANDOM.nextBytes(r);
    Path dir = ROOT.resolve(HexFormat.of().formatHex(r));
    try {
      Files.createDirectory(dir);
    } catch (IOException | UnsupportedOperationException e) {
      return null;
    }
    if (!BulkDirAccess.restrict(dir, user)) {
      delete(dir);
      return null;
    }
    return dir;
  }

  private static boolean makeRoot() {
    try {
      Files.createDirectories(ROOT);
      return Files.isWritable(ROOT);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** Whether {@code path} has the one shape this class makes (no other path is ever deleted). */
  static boolean isBulkPath(String path) {
    return NAME.matcher(path).matches();
  }

  static void delete(@Nullable Path dir) {
    if (dir != null && isBulkPath(dir.toString())) {
      try {
        HostFiles.deleteTree(dir);
      } catch (IOException | RuntimeException e) {
        // Best effort: /run is a tmpfs, emptied at the next boot anyway.
      }
    }
  }

  /** The bulk directory a container's label names, if it has the right shape and exists. */
  static Optional<Path> of(InspectContainerResponse c) {
    Map<String, String> labels = c.getConfig() == null ? null : c.getConfig().getLabels();
    String dir = labels == null ? null : labels.get(Labels.BULK_DIR);
    if (dir == null || !isBulkPath(dir)) {
      return Optional.empty();
    }
    Path p = Path.of(dir);
    return Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) ? Optional.of(p) : Optional.empty();
  }

  /**
   * Bulk directories no managed container names (its container was removed behind AgentNest's back,
   * e.g. with {@code docker rm}); prune removes them.
   */
  static List<ManagedResource> orphaned(List<ManagedResource> containers) {
    Set<String> used = new HashSet<>();
    containers.forEach(
        c -> {
          String d = c.labels().get(Labels.BULK_DIR);
          if (d != null) {
            used.add(d);
          }
        });
    List<ManagedResource> out = new ArrayList<>();
    if (!Files.isDirectory(ROOT)) {
      return out;
    }
    try (Stream<Path> dirs = Files.list(ROOT)) {
      for (Path d : (Iterable<Path>) dirs::iterator) {
        String path = d.toString();
        if (isBulkPath(path) && !used.contains(path) && out.size() < 10_000) {
          Instant created = Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS).toInstant();
          out.add(
              new ManagedResource(
                  KIND, path, d.getFileName().toString(), "orphaned", created, -1, Map.of()));
        }
      }
    } catch (IOException e) {
      // Unreadable: nothing to offer for pruning.
    }
    return out;
  }
}
