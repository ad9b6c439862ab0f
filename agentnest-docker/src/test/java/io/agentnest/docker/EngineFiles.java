package io.agentnest.docker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What the Docker engine keeps about one container: its {@code docker inspect} output and the files
 * under the engine's data root that belong to that container alone (its directory under {@code
 * containers/}, its overlay upper, work and init layers). Tests look for secret values in them.
 * Reads only; scans only the container asked about; every read is bounded.
 */
final class EngineFiles {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long MAX_SCAN_BYTES = 256L << 20;

  private EngineFiles() {}

  /** {@code docker inspect ID} as the engine's CLI prints it. */
  static String inspect(String id) throws IOException, InterruptedException {
    return docker("inspect", id);
  }

  private static String docker(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("docker"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out;
    try (InputStream in = p.getInputStream()) {
      out = in.readNBytes(4 << 20);
    }
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException(cmd + " did not finish");
    }
    String text = new String(out, StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new IllegalStateException(cmd + " failed: " + text);
    }
    return text;
  }

  /** The host pid of the container's main process (the agent). */
  static long mainPid(String inspect) throws IOException {
    return JSON.readTree(inspect).path(0).path("State").path("Pid").asLong();
  }

  /** The container's own directories under the data root; fails when they cannot be read. */
  static List<Path> containerDirs(String inspect) throws IOException, InterruptedException {
    JsonNode c = JSON.readTree(inspect).path(0);
    String fullId = c.path("Id").asText();
    Path root = Path.of(docker("info", "--format", "{{.DockerRootDir}}").strip());
    List<Path> dirs = new ArrayList<>();
    dirs.add(root.resolve("containers").resolve(fullId));
    JsonNode data = c.path("GraphDriver").path("Data");
    for (String k : List.of("UpperDir", "WorkDir")) {
      if (data.hasNonNull(k)) {
        dirs.add(Path.of(data.path(k).asText()));
      }
    }
    // The first lower layer is the container's own init layer; the rest are the image's.
    String lower = data.path("LowerDir").asText("");
    if (!lower.isEmpty() && lower.split(":")[0].contains("-init")) {
      dirs.add(Path.of(lower.split(":")[0]));
    }
    for (Path d : dirs) {
      if (!Files.isDirectory(d) || !Files.isReadable(d)) {
        DockerEngineRequired.missing(
            "read access to the engine's data root", d + " is not a readable directory");
      }
    }
    return dirs;
  }

  /** Regular files under {@code dirs} that contain {@code needle} (symlinks not followed). */
  static List<Path> filesContaining(List<Path> dirs, byte[] needle) throws IOException {
    List<Path> hits = new ArrayList<>();
    long scanned = 0;
    for (Path d : dirs) {
      List<Path> files;
      try (Stream<Path> s = Files.walk(d)) {
        files =
            s.filter(f -> Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS))
                .limit(100_000)
                .toList();
      }
      for (Path f : files) {
        long size = Files.size(f);
        if (scanned + size > MAX_SCAN_BYTES) {
          throw new IllegalStateException(
              "more than " + MAX_SCAN_BYTES + " bytes under " + dirs + ": not a sandbox's own");
        }
        scanned += size;
        if (indexOf(Files.readAllBytes(f), needle) >= 0) {
          hits.add(f);
        }
      }
    }
    return hits;
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int k = 0; k < needle.length; k++) {
        if (hay[i + k] != needle[k]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
