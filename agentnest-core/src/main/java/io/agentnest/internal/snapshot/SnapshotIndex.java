package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.SnapshotException;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * Which snapshot is the latest under each name: a counter that grows with every save, and per name
 * the counter value (generation) of its last save, signed with the snapshot key and kept beside it
 * ({@code snapshot.index}), outside the store. Every manifest carries its generation under its own
 * signature; a manifest whose generation is not the one in the index (an older, validly signed copy
 * put back, a removed snapshot brought back) is refused. Snapshots saved before the index existed
 * are adopted once, by the signature of their manifest.
 */
final class SnapshotIndex {
  static final int FORMAT = 1;
  static final long MAX_BYTES = 16L << 20;

  /**
   * The latest save of one name: its generation, and for snapshots adopted from before the index
   * (generation 0) the signature of the manifest that was adopted.
   */
  record Entry(long generation, String manifestHmac) {}

  /** The counter (the last generation handed out) and the entries. */
  record State(long counter, Map<String, Entry> entries) {}

  /** Signs bytes with the snapshot key. */
  interface Signer {
    String sign(byte[] body) throws IOException;
  }

  /** The snapshots in the store now, for adoption when there is no index yet. */
  interface Existing {
    Map<String, Entry> snapshots() throws IOException;
  }

  /** Work done while holding the index's lock. */
  interface Locked<T> {
    T run(State state) throws IOException;
  }

  /** One lock per index file in this process; the file lock covers other processes. */
  private static final Map<Path, ReentrantLock> IN_PROCESS = new ConcurrentHashMap<>();

  private final Path file;
  private final Signer signer;
  private final Existing existing;

  SnapshotIndex(Path file, Signer signer, Existing existing) {
    this.file = file;
    this.signer = signer;
    this.existing = existing;
  }

  Path file() {
    return file;
  }

  /** The entry for {@code name}, or null; adopts the store's snapshots when there is no index. */
  @Nullable Entry entry(String name) throws IOException {
    State s = read();
    if (s == null) {
      s = locked(st -> st);
    }
    return s.entries().get(name);
  }

  /**
   * Refuses {@code manifest} (already verified under the key) unless it is the latest one saved as
   * {@code name}: an older copy put back, or a removed snapshot brought back, is rollback.
   */
  void checkLatest(String name, JsonNode manifest, String manifestHmac) throws IOException {
    Entry e = entry(name);
    long generation = manifest.path("generation").asLong(0);
    boolean latest =
        e != null
            && e.generation() == generation
            && (generation > 0
                || MessageDigest.isEqual(
                    e.manifestHmac().getBytes(StandardCharsets.US_ASCII),
                    manifestHmac.getBytes(StandardCharsets.US_ASCII)));
    if (!latest) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "snapshot '"
              + name
              + "' is not the one last saved under this name"
              + (e == null
                  ? " (the signed index " + file + " has no snapshot of that name: it was removed)"
                  : " (it is generation "
                      + generation
                      + ", the signed index "
                      + file
                      + " says the latest is "
                      + e.generation()
                      + ")")
              + ": an older copy was put back into the store; it is refused, remove it"
              + " ('agentnest snapshot rm "
              + name
              + "') and save the sandbox again");
    }
  }

  /**
   * Runs {@code work} holding the index's lock (in this process and across processes), with the
   * current state (adopted from the store when there is no index yet).
   */
  <T> T locked(Locked<T> work) throws IOException {
    Path abs = file.toAbsolutePath().normalize();
    ReentrantLock local = IN_PROCESS.computeIfAbsent(abs, k -> new ReentrantLock());
    local.lock();
    try {
      Path parent = abs.getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Path lockFile = abs.resolveSibling(abs.getFileName() + ".lock");
      try (FileChannel ch =
              FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
          FileLock ignored = ch.lock()) {
        State s = read();
        if (s == null) {
          Map<String, Entry> adopted = new LinkedHashMap<>(existing.snapshots());
          s = new State(0, adopted);
          write(s);
        }
        return work.run(s);
      }
    } finally {
      local.unlock();
    }
  }

  /** Records {@code name}'s new generation (under {@link #locked}). */
  void put(State s, String name, long generation, String manifestHmac) throws IOException {
    Map<String, Entry> entries = new LinkedHashMap<>(s.entries());
    entries.put(name, new Entry(generation, manifestHmac));
    write(new State(Math.max(s.counter(), generation), entries));
  }

  /** Forgets {@code name} (under {@link #locked}): a copy put back later is refused. */
  void remove(State s, String name) throws IOException {
    Map<String, Entry> entries = new LinkedHashMap<>(s.entries());
    if (entries.remove(name) != null) {
      write(new State(s.counter(), entries));
    }
  }

  /** The verified index, or null when there is none. */
  @Nullable State read() throws IOException {
    if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
      return null;
    }
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || Files.size(file) > MAX_BYTES) {
      throw tampered("is not a regular file of at most " + MAX_BYTES + " bytes");
    }
    byte[] bytes;
    try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
      bytes = in.readNBytes((int) MAX_BYTES + 1);
    }
    JsonNode signed;
    try {
      signed = Json.MAPPER.readTree(bytes);
    } catch (IOException e) {
      throw tampered("cannot be read as JSON");
    }
    JsonNode idx = signed == null ? null : signed.get("index");
    if (idx == null || !idx.isObject() || !signed.path("hmac_sha256").isTextual()) {
      throw tampered("has no signature");
    }
    String expected = signer.sign(Json.MAPPER.writeValueAsBytes(idx));
    if (!MessageDigest.isEqual(
        expected.getBytes(StandardCharsets.US_ASCII),
        signed.path("hmac_sha256").asText().getBytes(StandardCharsets.US_ASCII))) {
      throw tampered("was modified (its signature does not match the snapshot key)");
    }
    if (idx.path("format").asInt() != FORMAT || !idx.path("entries").isObject()) {
      throw tampered("has format " + idx.path("format") + ", not " + FORMAT);
    }
    Map<String, Entry> entries = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = idx.path("entries").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      entries.put(
          e.getKey(),
          new Entry(
              e.getValue().path("generation").asLong(),
              e.getValue().path("manifest_hmac").asText("")));
    }
    return new State(idx.path("counter").asLong(), entries);
  }

  private void write(State s) throws IOException {
    ObjectNode idx = Json.object().put("format", FORMAT).put("counter", s.counter());
    ObjectNode entries = idx.putObject("entries");
    s.entries()
        .forEach(
            (name, e) ->
                entries
                    .putObject(name)
                    .put("generation", e.generation())
                    .put("manifest_hmac", e.manifestHmac()));
    ObjectNode signed = Json.object();
    signed.set("index", idx);
    signed.put("hmac_sha256", signer.sign(Json.MAPPER.writeValueAsBytes(idx)));
    Path dir = file.toAbsolutePath().getParent();
    Path tmp = Files.createTempFile(dir, ".snapshot-index-", ".tmp");
    try {
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        ch.write(ByteBuffer.wrap(Json.MAPPER.writeValueAsBytes(signed)));
        ch.force(true);
      }
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private SnapshotException tampered(String why) {
    return new SnapshotException(
        SnapshotException.Reason.TAMPERED,
        "the snapshot index "
            + file
            + " "
            + why
            + ": no snapshot is trusted while it is; restore it from a backup, or remove it to"
            + " adopt the snapshots now in the store as the latest ones");
  }
}
