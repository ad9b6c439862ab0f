package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ConfigException;
import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The manifest of a snapshot: built from the parts written, signed with this installation's key,
 * and read back (size-capped, signature, format, part list) before anything in the snapshot is
 * trusted.
 */
final class Manifest {
  private Manifest() {}

  static final int FORMAT = 1;
  static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");
  static final long MAX_MANIFEST_BYTES = 4L << 20;

  /** Variable names and skipped objects listed per session in a manifest (counts are kept). */
  static final int MAX_LISTED = 1000;

  static ObjectNode sessionMeta(
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

  static ObjectNode build(
      String name,
      SandboxConfig config,
      String imageId,
      List<Parts.PartWriter> parts,
      @Nullable String memoryNote) {
    ObjectNode m = Json.object();
    m.put("format", FORMAT).put("name", name).put("created", Instant.now().toString());
    m.put("image", config.image()).put("image_id", imageId);
    if (config.runtime() != null) {
      m.put("runtime", config.runtime());
    }
    m.set("config", ConfigCodec.toJson(config));
    boolean memory = parts.stream().anyMatch(p -> p.kind.equals("memory"));
    m.put("memory", memory)
        .put(
            "memory_note",
            memoryNote != null ? memoryNote : CheckpointMemory.memoryNote(config.runtime()));
    ArrayNode list = m.putArray("parts");
    long total = 0;
    for (Parts.PartWriter p : parts) {
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

  static SnapshotException corrupt(String name, String why) {
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

  /** A manifest with its signature, as {@code manifest.json} holds it. */
  record Signed(byte[] bytes, String signature) {}

  /** Signs {@code m} with {@code key}. */
  static Signed sign(ObjectNode m, SnapshotKey key) throws IOException {
    String signature = key.hmac(Json.MAPPER.writeValueAsBytes(m));
    ObjectNode signed = Json.object();
    signed.set("manifest", m);
    signed.put("hmac_sha256", signature);
    return new Signed(Json.MAPPER.writeValueAsBytes(signed), signature);
  }

  /** A manifest whose size, signature, format and part list checked out. */
  record Verified(JsonNode manifest, String signature) {}

  /**
   * Reads {@code mf}, the manifest of snapshot {@code name}, and verifies it: at most {@link
   * #MAX_MANIFEST_BYTES}, signed with {@code key}, this format and name, and a part list whose
   * kinds, file names and counts a snapshot can have.
   */
  static Verified read(Path mf, String name, SnapshotKey key) {
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
      expected = key.hmac(Json.MAPPER.writeValueAsBytes(m));
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
              + key.file()
              + "): it is refused; remove it ('agentnest snapshot rm "
              + name
              + "') and take a new snapshot");
    }
    if (m.path("format").asInt() != FORMAT || !name.equals(m.path("name").asText())) {
      throw corrupt(name, "has format " + m.path("format") + " or another name");
    }
    Set<String> files = new HashSet<>();
    int sessions = 0;
    int memory = 0;
    if (!m.path("parts").isArray()
        || m.path("parts").size()
            > SandboxState.MAX_SESSIONS + 2 + CheckpointMemory.MAX_MEMORY_PARTS) {
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
            case "memory" ->
                CheckpointMemory.validMemoryFile(file)
                    && ++memory <= CheckpointMemory.MAX_MEMORY_PARTS;
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
    return new Verified(m, signed.path("hmac_sha256").asText());
  }

  /** The config saved in manifest {@code m} of snapshot {@code name}. */
  static SandboxConfig savedConfig(JsonNode m, String name) {
    try {
      return ConfigCodec.fromJson(m.path("config"));
    } catch (IllegalArgumentException | ConfigException e) {
      throw new SnapshotException(
          SnapshotException.Reason.CORRUPT,
          "snapshot '" + name + "' holds a config this version refuses: " + e.getMessage());
    }
  }
}
