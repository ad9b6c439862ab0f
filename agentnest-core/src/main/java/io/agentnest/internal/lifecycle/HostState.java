package io.agentnest.internal.lifecycle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.AgentNestHome;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One small JSON file per sandbox under {@code AGENTNEST_HOME/sandboxes}: what labels cannot hold
 * because they are fixed at creation (an extended expiry, the current owner after a reattach).
 */
public final class HostState {
  private static final Logger LOG = LoggerFactory.getLogger(HostState.class);

  /**
   * The owner of a sandbox left running on purpose ({@code detach()}), or attached to from a
   * process that did not create it: no process's exit orphans it, only its expiry ends it.
   */
  public static final String DETACHED = "detached";

  /** What is recorded for one sandbox. */
  public record Entry(String id, String backend, String owner, Instant expiresAt) {}

  private HostState() {}

  // Compiled once: String.replaceAll compiles its pattern on every call, each hand-out's.
  private static final Pattern UNSAFE_IN_NAME = Pattern.compile("[^A-Za-z0-9_.-]");

  private static Path file(String id) {
    return AgentNestHome.sandboxes().resolve(UNSAFE_IN_NAME.matcher(id).replaceAll("_") + ".json");
  }

  public static void write(Entry e) {
    ObjectNode o = Json.object();
    o.put("id", e.id()).put("backend", e.backend()).put("owner", e.owner());
    o.put("expires_at", e.expiresAt().getEpochSecond());
    Path target = file(e.id());
    try {
      Files.createDirectories(target.getParent());
      Path tmp = Files.createTempFile(target.getParent(), ".tmp-", ".json");
      Files.write(tmp, Json.MAPPER.writeValueAsBytes(o));
      try {
        Files.move(
            tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException ex) {
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException ex) {
      // State is an optimisation for prune and extend; the sandbox itself does not depend on it.
      LOG.warn("cannot record sandbox state in {}: {}", target, ex.toString());
    }
  }

  public static Optional<Entry> read(String id) {
    return parse(file(id));
  }

  private static Optional<Entry> parse(Path p) {
    try {
      if (!Files.isRegularFile(p) || Files.size(p) > 64 * 1024) {
        return Optional.empty();
      }
      JsonNode n = Json.MAPPER.readTree(p.toFile());
      return Optional.of(
          new Entry(
              n.path("id").asText(""),
              n.path("backend").asText("docker"),
              n.path("owner").asText(""),
              Instant.ofEpochSecond(n.path("expires_at").asLong(0))));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  public static List<Entry> all() {
    List<Entry> out = new ArrayList<>();
    Path dir = AgentNestHome.sandboxes();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.json")) {
      for (Path p : ds) {
        parse(p).filter(e -> !e.id().isEmpty()).ifPresent(out::add);
      }
    } catch (IOException e) {
      LOG.warn("cannot list {}: {}", dir, e.toString());
    }
    return out;
  }

  public static void delete(String id) {
    try {
      Files.deleteIfExists(file(id));
    } catch (IOException e) {
      LOG.debug("cannot delete state of {}", id, e);
    }
  }
}
