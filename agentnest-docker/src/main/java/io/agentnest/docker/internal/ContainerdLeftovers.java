package io.agentnest.docker.internal;

import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What containerd leaves behind when a container starts from a checkpoint. containerd 1.6 (the one
 * Docker 20.10 runs) unpacks the image of every such start into a fresh {@code
 * /tmp/ctrd-checkpoint<random>} and never removes it (containerd/containerd#10166), so each gVisor
 * fork copy and restore would leave that sandbox's process memory on the engine host's disk.
 *
 * <p>Around each start from a checkpoint: the directories that appeared during it and hold a
 * byte-identical copy of the image it started from are removed, once no start from a checkpoint is
 * in flight in this process (a fork's copies start from one image at once, and one copy's directory
 * must not go while its own start still reads it). Nothing else in the directory is touched.
 */
final class ContainerdLeftovers {
  private static final Logger LOG = LoggerFactory.getLogger(ContainerdLeftovers.class);

  static final String PREFIX = "ctrd-checkpoint";

  /** Directories looked at per start: far more than starts can add while one runs. */
  static final int MAX_CANDIDATES = 256;

  /** Files per image: runsc writes one or a few. */
  private static final int MAX_FILES = 64;

  private final Path tmp;
  private int inFlight; // guarded by this
  private final List<Path> matched = new ArrayList<>(); // guarded by this

  ContainerdLeftovers(Path tmp) {
    this.tmp = tmp;
  }

  /** Before a start from a checkpoint: the leftover directories already there. */
  Set<String> enter() {
    synchronized (this) {
      inFlight++;
    }
    return names();
  }

  /**
   * After that start, whether it worked or not: the directories that appeared since {@code before}
   * with a copy of {@code image} (the checkpoint directory it started from) are removed now, or by
   * the last start still in flight.
   */
  void exit(Set<String> before, Path image) {
    List<Path> copies = copiesOf(before, image);
    List<Path> remove;
    synchronized (this) {
      matched.addAll(copies);
      if (--inFlight > 0) {
        return;
      }
      remove = new ArrayList<>(matched);
      matched.clear();
    }
    for (Path p : remove) {
      try {
        HostFiles.deleteTree(p);
      } catch (IOException e) {
        LOG.warn("cannot remove containerd's copy of a checkpoint image {}: {}", p, e.toString());
      }
    }
  }

  private Set<String> names() {
    Set<String> out = new HashSet<>();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(tmp, PREFIX + "*")) {
      for (Path p : s) {
        out.add(p.getFileName().toString());
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot list {}: {}", tmp, e.toString());
    }
    return out;
  }

  List<Path> copiesOf(Set<String> before, Path image) {
    List<Path> out = new ArrayList<>();
    Map<String, Path> want = files(image);
    if (want == null || want.isEmpty()) {
      return out;
    }
    int seen = 0;
    for (String name : names()) {
      if (before.contains(name) || ++seen > MAX_CANDIDATES) {
        continue;
      }
      Path dir = tmp.resolve(name);
      if (sameFiles(files(dir), want)) {
        out.add(dir);
      }
    }
    return out;
  }

  /** The regular files directly in {@code dir} by name; null when it holds anything else. */
  private static @Nullable Map<String, Path> files(Path dir) {
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      return null;
    }
    Map<String, Path> out = new TreeMap<>();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
      for (Path p : s) {
        if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) || out.size() >= MAX_FILES) {
          return null;
        }
        out.put(p.getFileName().toString(), p);
      }
    } catch (IOException | RuntimeException e) {
      return null;
    }
    return out;
  }

  private static boolean sameFiles(@Nullable Map<String, Path> got, Map<String, Path> want) {
    if (got == null || !got.keySet().equals(want.keySet())) {
      return false;
    }
    try {
      for (Map.Entry<String, Path> e : want.entrySet()) {
        Path other = got.get(e.getKey());
        if (other == null
            || Files.size(other) != Files.size(e.getValue())
            || Files.mismatch(other, e.getValue()) != -1) {
          return false;
        }
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
