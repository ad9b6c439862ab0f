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
  static final long MAX_PART_BYTES = SandboxState.MAX_FILES_BYTES;
  private static final long MAX_MANIFEST_BYTES = 4L << 20;

  private final Path root;

  public SnapshotStore(Path root) {
    this.root = root;
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
          "BAD_NAME",
          "snapshot name '"
              + shown.replace("\0", "\\0")
              + "' is invalid: use 1-100 letters, digits, '.', '_' or '-', starting with a letter"
              + " or digit, e.g. 'after-training'");
    }
    return name;
  }

  // ------------------------------------------------------------------------------- save

  /** Captures {@code sb} and writes it as {@code name}. */
  public SnapshotInfo save(DefaultSandbox sb, String name, boolean replace) {
    checkName(name);
    Path dir = root.resolve(name);
    if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS) && !replace) {
      throw new SnapshotException(
          "EXISTS",
          "snapshot '"
              + name
              + "' exists: choose another name, or replace it (--force, or"
              + " snapshot(name, true))");
    }
    SandboxConfig config = sb.config();
    String imageId =
        Backends.get(config.backend())
            .imageId(config.image())
            .orElseThrow(
                () ->
                    new SnapshotException(
                        "IMAGE_CHANGED",
                        "the engine no longer has image '" + config.image() + "'"));
    SandboxState.Captured state = SandboxState.capture(sb, sb.sessionNames());
    return write(name, config, imageId, state, replace);
  }

  SnapshotInfo write(
      String name,
      SandboxConfig config,
      String imageId,
      SandboxState.Captured state,
      boolean replace) {
    checkName(name);
    try {
      Files.createDirectories(root);
      Path staging = Files.createTempDirectory(root, ".saving-" + name + "-");
      try {
        ObjectNode m = Json.object();
        m.put("format", FORMAT).put("name", name).put("created", Instant.now().toString());
        m.put("image", config.image()).put("image_id", imageId);
        if (config.runtime() != null) {
          m.put("runtime", config.runtime());
        }
        m.set("config", configJson(config));
        m.put("memory", false)
            .put("memory_note", "process memory is not captured (state transfer of sessions)");
        ArrayNode parts = m.putArray("parts");
        long total = 0;
        total += part(staging, parts, "workspace.tar", "workspace", null, state.workspace());
        total += part(staging, parts, "tmp.tar", "tmp", null, state.tmp());
        int i = 0;
        for (SandboxState.Session s : state.sessions()) {
          String file = "session-" + i++ + ".bin";
          ObjectNode meta =
              Json.object().put("session", s.name()).put("extra_bytes", s.extraBytes());
          s.variables().forEach(meta.putArray("variables")::add);
          ArrayNode sk = meta.putArray("skipped");
          for (ForkReport.Skipped x : s.skipped()) {
            sk.addObject()
                .put("session", x.session())
                .put("name", x.name())
                .put("type", x.type())
                .put("reason", x.reason());
          }
          total += part(staging, parts, file, "session", meta, s.data());
        }
        m.put("bytes", total);
        byte[] body = Json.MAPPER.writeValueAsBytes(m);
        ObjectNode signed = Json.object();
        signed.set("manifest", m);
        signed.put("hmac_sha256", hmac(body));
        Files.write(staging.resolve("manifest.json"), Json.MAPPER.writeValueAsBytes(signed));
        Path dir = root.resolve(name);
        if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
          if (!replace) {
            throw new SnapshotException(
                "EXISTS",
                "snapshot '"
                    + name
                    + "' exists: choose another name, or replace it (--force, or"
                    + " snapshot(name, true))");
          }
          Path old = root.resolve(".removing-" + name + "-" + System.nanoTime());
          Files.move(dir, old, StandardCopyOption.ATOMIC_MOVE);
          deleteTree(old);
        }
        try {
          Files.move(staging, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
          throw new SnapshotException(
              "CORRUPT", "the snapshot store " + root + " must be on one file system");
        }
        return info(m);
      } finally {
        if (Files.exists(staging)) {
          deleteTree(staging);
        }
      }
    } catch (IOException e) {
      throw new SnapshotException(
          "IO", "cannot write snapshot '" + name + "' under " + root + ": " + e.getMessage());
    }
  }

  private static long part(
      Path dir, ArrayNode parts, String file, String kind, @Nullable ObjectNode meta, byte[] data)
      throws IOException {
    Files.write(dir.resolve(file), data, StandardOpenOption.CREATE_NEW);
    ObjectNode p = parts.addObject().put("file", file).put("kind", kind);
    p.put("size", data.length).put("sha256", sha256(data));
    if (meta != null) {
      p.set("meta", meta);
    }
    return data.length;
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
    return o;
  }

  // ---------------------------------------------------------------------------- restore

  /**
   * Starts a sandbox from snapshot {@code name}. With {@code overrides} null, the saved config is
   * used; a snapshot saved with secret environment variables needs them supplied in {@code
   * overrides}.
   */
  public Sandbox restore(String name, @Nullable SandboxConfig overrides) {
    Loaded l = load(name);
    SandboxConfig config = overrides != null ? overrides : savedConfig(l.manifest, name);
    String savedImage = l.manifest.path("image").asText();
    if (!config.image().equals(savedImage)) {
      throw new SnapshotException(
          "IMAGE_CHANGED",
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
          "NEEDS_CONFIG",
          "snapshot '"
              + name
              + "' was taken with secret environment variables "
              + missing
              + ", which are never written to disk: pass them again with"
              + " Sandbox.restore(name, config.toBuilder().secretEnv(...).build())");
    }
    String savedId = l.manifest.path("image_id").asText();
    String nowId = Backends.get(config.backend()).imageId(config.image()).orElse("(missing)");
    if (!savedId.equals(nowId)) {
      throw new SnapshotException(
          "IMAGE_CHANGED",
          "image '"
              + savedImage
              + "' changed since snapshot '"
              + name
              + "' was taken (then "
              + savedId
              + ", now "
              + nowId
              + "): its files were saved relative to that image; rebuild or tag the old image"
              + " back, or take a new snapshot");
    }
    SandboxState.Captured state = l.state();
    DefaultSandbox sb = (DefaultSandbox) DefaultSandbox.create(config);
    try {
      long t0 = System.nanoTime();
      SandboxState.restore(sb, state);
      sb.audit(
          "snapshot.restored",
          Map.of(
              "snapshot",
              name,
              "bytes",
              l.manifest.path("bytes").asLong(),
              "millis",
              Duration.ofNanos(System.nanoTime() - t0).toMillis()));
      return sb;
    } catch (RuntimeException e) {
      sb.destroy();
      throw e;
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
      return b.build();
    } catch (io.agentnest.ConfigException e) {
      throw new SnapshotException(
          "CORRUPT",
          "snapshot '" + name + "' holds a config this version refuses: " + e.getMessage());
    }
  }

  /** A verified manifest and its verified parts. */
  record Loaded(JsonNode manifest, Path dir) {
    SandboxState.Captured state() {
      byte[] ws = new byte[0];
      byte[] tmp = new byte[0];
      List<SandboxState.Session> sessions = new ArrayList<>();
      for (JsonNode p : manifest.path("parts")) {
        byte[] data = readPart(dir, p);
        switch (p.path("kind").asText()) {
          case "workspace" -> ws = data;
          case "tmp" -> tmp = data;
          case "session" -> {
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
          default -> throw corrupt(manifest.path("name").asText(), "has a part of unknown kind");
        }
      }
      return new SandboxState.Captured(ws, tmp, sessions);
    }
  }

  /** Reads and verifies the manifest of {@code name} (signature, format, part list). */
  Loaded load(String name) {
    checkName(name);
    Path dir = root.resolve(name);
    Path mf = dir.resolve("manifest.json");
    if (!Files.isRegularFile(mf, LinkOption.NOFOLLOW_LINKS)) {
      throw new SnapshotException(
          "NOT_FOUND",
          "no snapshot '" + name + "' in " + root + ": 'agentnest snapshot ls' lists them");
    }
    JsonNode signed;
    try {
      if (Files.size(mf) > MAX_MANIFEST_BYTES) {
        throw corrupt(name, "has a manifest larger than " + MAX_MANIFEST_BYTES + " bytes");
      }
      signed = Json.MAPPER.readTree(Files.readAllBytes(mf));
    } catch (IOException e) {
      throw corrupt(name, "has an unreadable manifest (" + e.getMessage() + ")");
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
          "TAMPERED",
          "snapshot '"
              + name
              + "' was modified after it was saved (its manifest signature does not match this"
              + " installation's key "
              + keyFile()
              + "): it is refused; take a new snapshot");
    }
    if (m.path("format").asInt() != FORMAT || !name.equals(m.path("name").asText())) {
      throw corrupt(name, "has format " + m.path("format") + " or another name");
    }
    for (JsonNode p : m.path("parts")) {
      String file = p.path("file").asText();
      if (!file.matches("(workspace|tmp)\\.tar|session-[0-9]{1,4}\\.bin")) {
        throw corrupt(name, "lists a part with a bad file name");
      }
    }
    return new Loaded(m, dir);
  }

  static byte[] readPart(Path dir, JsonNode p) {
    String file = p.path("file").asText();
    Path f = dir.resolve(file);
    long size = p.path("size").asLong(-1);
    String name = dir.getFileName().toString();
    try {
      if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
        throw corrupt(name, "is missing its part " + file);
      }
      if (size < 0 || size > MAX_PART_BYTES || Files.size(f) != size) {
        throw corrupt(
            name,
            "has part " + file + " of " + Files.size(f) + " bytes, the manifest says " + size);
      }
      byte[] data;
      try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
        data = in.readNBytes((int) Math.min(size, Integer.MAX_VALUE - 8));
      }
      if (!sha256(data).equals(p.path("sha256").asText())) {
        throw corrupt(name, "has part " + file + " whose sha256 does not match the manifest");
      }
      return data;
    } catch (IOException e) {
      throw corrupt(name, "has an unreadable part " + file + ": " + e.getMessage());
    }
  }

  private static SnapshotException corrupt(String name, String why) {
    return new SnapshotException(
        "CORRUPT", "snapshot '" + name + "' " + why + ": it is refused; take a new snapshot");
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
      throw new SnapshotException("IO", "cannot read " + root + ": " + e.getMessage());
    }
    out.sort(Comparator.comparing(SnapshotInfo::created).reversed());
    return out;
  }

  /** Removes snapshot {@code name}; false when there is none. */
  public boolean remove(String name) {
    checkName(name);
    Path dir = root.resolve(name);
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return false;
    }
    try {
      Path old = root.resolve(".removing-" + name + "-" + System.nanoTime());
      Files.move(dir, old, StandardCopyOption.ATOMIC_MOVE);
      deleteTree(old);
      return true;
    } catch (IOException e) {
      throw new SnapshotException("IO", "cannot remove snapshot '" + name + "': " + e.getMessage());
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
        m.path("memory").asBoolean());
  }

  // ---------------------------------------------------------------------------- crypto

  Path keyFile() {
    Path parent = root.getParent();
    return (parent == null ? root : parent).resolve("snapshot.key");
  }

  private byte[] key() throws IOException {
    Path k = keyFile();
    if (!Files.exists(k)) {
      Files.createDirectories(k.getParent() == null ? root : k.getParent());
      byte[] fresh = new byte[32];
      new SecureRandom().nextBytes(fresh);
      Path tmp = Files.createTempFile(k.getParent(), ".snapshot-key-", ".tmp");
      try {
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
      } catch (UnsupportedOperationException ignored) {
        // not a POSIX file system; the directory's permissions protect it
      }
      Files.write(tmp, fresh);
      try {
        Files.move(tmp, k, StandardCopyOption.ATOMIC_MOVE);
      } catch (IOException raced) {
        Files.deleteIfExists(tmp);
      }
    }
    byte[] key = Files.readAllBytes(k);
    if (key.length < 32) {
      throw new SnapshotException(
          "TAMPERED",
          "the snapshot key "
              + k
              + " is too short: remove it (existing snapshots"
              + " then fail verification) or restore it from a backup");
    }
    return key;
  }

  private String hmac(byte[] body) throws IOException {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key(), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(body));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
