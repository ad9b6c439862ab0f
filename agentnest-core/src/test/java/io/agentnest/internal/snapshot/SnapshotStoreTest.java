package io.agentnest.internal.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.secrets.SecretScan;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.support.HostFiles;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Stream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Chars;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnapshotStoreTest {
  /** These tests save and load without an engine: any use of a backend fails them. */
  static final Function<String, RuntimeBackend> NO_BACKEND =
      name -> {
        throw new AssertionError("no backend in this test, asked for " + name);
      };

  @TempDir Path home;

  SnapshotStore store() {
    return new SnapshotStore(home.resolve("snapshots"), NO_BACKEND);
  }

  static SandboxState.Captured state() {
    return new SandboxState.Captured(
        "ws-bytes".getBytes(StandardCharsets.UTF_8),
        "tmp".getBytes(StandardCharsets.UTF_8),
        List.of(
            new SandboxState.Session(
                "default", "pickle".getBytes(StandardCharsets.UTF_8), 0, List.of("x"), List.of())));
  }

  SnapshotInfo save(String name) {
    return store().write(name, SandboxConfig.defaults(), "sha256:abc", state(), false);
  }

  Path manifest(String name) {
    return home.resolve("snapshots/" + name + "/manifest.json");
  }

  /** Edits a saved manifest and signs it again with the installation's key (a key holder). */
  void resign(String name, Consumer<ObjectNode> edit) throws Exception {
    ObjectNode signed = (ObjectNode) Json.MAPPER.readTree(Files.readAllBytes(manifest(name)));
    ObjectNode m = (ObjectNode) signed.get("manifest");
    edit.accept(m);
    signed.put("hmac_sha256", store().hmac(Json.MAPPER.writeValueAsBytes(m)));
    Files.write(manifest(name), Json.MAPPER.writeValueAsBytes(signed));
  }

  static String code(Throwable e) {
    return ((SnapshotException) e).code();
  }

  @Test
  void writesSignedManifestAndReadsItBack() throws Exception {
    SnapshotInfo info = save("s1");
    assertThat(info.bytes()).isEqualTo(8 + 3 + 6);
    assertThat(info.sessions()).containsExactly("default");
    assertThat(info.memory()).isFalse();
    assertThat(info.memoryNote()).contains("not captured");
    Loaded l = store().load("s1");
    Parts.verifyAll(l);
    SandboxState.Captured back = l.state();
    assertThat(back.workspace()).isEqualTo("ws-bytes".getBytes(StandardCharsets.UTF_8));
    assertThat(back.sessions().get(0).data()).isEqualTo("pickle".getBytes(StandardCharsets.UTF_8));
    assertThat(back.sessions().get(0).variables()).containsExactly("x");
    assertThat(store().list()).extracting(SnapshotInfo::name).containsExactly("s1");
    assertThat(Files.getPosixFilePermissions(home.resolve("snapshot.key")))
        .isEqualTo(PosixFilePermissions.fromString("rw-------"));
    JsonNode m = l.manifest();
    assertThat(m.path("format").asInt()).isEqualTo(Manifest.FORMAT);
    for (JsonNode p : m.path("parts")) {
      assertThat(p.path("sha256").asText()).hasSize(64);
      assertThat(p.has("size")).isTrue();
    }
  }

  @Test
  void everyManifestFieldIsCoveredBySignature() throws Exception {
    save("s2");
    Path mf = manifest("s2");
    String original = Files.readString(mf);
    ObjectNode signed = (ObjectNode) Json.MAPPER.readTree(original);
    List<String> paths = new ArrayList<>();
    leaves(signed.get("manifest"), "", paths);
    assertThat(paths)
        .contains("/image_id", "/parts/0/size", "/parts/0/sha256", "/config/memory_bytes");
    for (String path : paths) {
      ObjectNode copy = signed.deepCopy();
      JsonNode leaf = copy.get("manifest").at(path);
      String parent = path.substring(0, path.lastIndexOf('/'));
      String key = path.substring(path.lastIndexOf('/') + 1);
      JsonNode container = copy.get("manifest").at(parent);
      JsonNode changed =
          leaf.isTextual()
              ? Json.MAPPER.getNodeFactory().textNode(leaf.asText() + "x")
              : leaf.isBoolean()
                  ? Json.MAPPER.getNodeFactory().booleanNode(!leaf.asBoolean())
                  : Json.MAPPER.getNodeFactory().numberNode(leaf.asDouble() + 1);
      if (container.isObject()) {
        ((ObjectNode) container).set(key, changed);
      } else {
        ((ArrayNode) container).set(Integer.parseInt(key), changed);
      }
      Files.write(mf, Json.MAPPER.writeValueAsBytes(copy));
      assertThatThrownBy(() -> store().load("s2"))
          .as(path)
          .isInstanceOf(SnapshotException.class)
          .hasMessageContaining("modified after it was saved")
          .extracting(SnapshotStoreTest::code)
          .isEqualTo("TAMPERED");
    }
    // An added field, a removed field, another signature.
    ObjectNode added = signed.deepCopy();
    ((ObjectNode) added.get("manifest")).put("extra", 1);
    Files.write(mf, Json.MAPPER.writeValueAsBytes(added));
    assertThatThrownBy(() -> store().load("s2"))
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("TAMPERED");
    ObjectNode removed = signed.deepCopy();
    ((ObjectNode) removed.get("manifest")).remove("memory_note");
    Files.write(mf, Json.MAPPER.writeValueAsBytes(removed));
    assertThatThrownBy(() -> store().load("s2"))
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("TAMPERED");
    ObjectNode unsigned = signed.deepCopy();
    unsigned.remove("hmac_sha256");
    Files.write(mf, Json.MAPPER.writeValueAsBytes(unsigned));
    assertThatThrownBy(() -> store().load("s2")).hasMessageContaining("without a signature");
    Files.writeString(mf, "{not json");
    assertThatThrownBy(() -> store().load("s2")).hasMessageContaining("unreadable manifest");
    assertThat(store().list()).isEmpty();
    Files.writeString(mf, original);
    assertThat(store().list()).hasSize(1);
  }

  private static void leaves(JsonNode n, String at, List<String> out) {
    if (n.isObject()) {
      n.fields().forEachRemaining(e -> leaves(e.getValue(), at + "/" + e.getKey(), out));
    } else if (n.isArray()) {
      for (int i = 0; i < n.size(); i++) {
        leaves(n.get(i), at + "/" + i, out);
      }
    } else if (!n.isNull()) {
      out.add(at);
    }
  }

  @Test
  void anotherInstallationsKeyIsRefused() throws Exception {
    save("s4");
    Files.delete(home.resolve("snapshot.key"));
    assertThatThrownBy(() -> store().load("s4"))
        .hasMessageContaining("modified after it was saved")
        .hasMessageContaining("snapshot rm s4");
  }

  @Test
  void aKeyOthersCanReadIsRefused() throws Exception {
    save("s4");
    Path key = home.resolve("snapshot.key");
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> store().load("s4"))
        .hasMessageContaining("can be read or written by other users")
        .hasMessageContaining("chmod 600");
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
    Files.delete(key);
    Files.createSymbolicLink(key, home.resolve("elsewhere"));
    assertThatThrownBy(() -> store().load("s4")).hasMessageContaining("not a regular file");
  }

  @Test
  void processesRacingToMakeTheKeyAgreeOnOne() throws Exception {
    List<CompletableFuture<SnapshotInfo>> all = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      String name = "race" + i;
      all.add(
          CompletableFuture.supplyAsync(
              () ->
                  new SnapshotStore(home.resolve("snapshots"), NO_BACKEND)
                      .write(name, SandboxConfig.defaults(), "sha256:abc", state(), false)));
    }
    all.forEach(CompletableFuture::join);
    assertThat(store().list()).hasSize(8);
    try (var s = Files.list(home)) {
      assertThat(s.map(p -> p.getFileName().toString()))
          .as("one key, one index (every save recorded in it), no temporary files")
          .containsExactlyInAnyOrder(
              "snapshot.key", "snapshot.index", "snapshot.index.lock", "snapshots");
    }
  }

  @Test
  void truncatedChangedGrownOrMissingPartsAreRefused() throws Exception {
    save("p1");
    Path ws = home.resolve("snapshots/p1/workspace.tar");
    byte[] good = Files.readAllBytes(ws);
    Map<String, byte[]> cases =
        Map.of(
            "bytes, the manifest says", Arrays.copyOf(good, good.length - 1),
            "bytes, the manifest says ", Arrays.copyOf(good, good.length + 1),
            "sha256 does not match", "ws-bytez".getBytes(StandardCharsets.UTF_8));
    for (Map.Entry<String, byte[]> c : cases.entrySet()) {
      Files.write(ws, c.getValue());
      Loaded l = store().load("p1");
      assertThatThrownBy(() -> Parts.verifyAll(l))
          .as(c.getKey())
          .hasMessageContaining(c.getKey().strip())
          .hasMessageContaining("snapshot rm p1")
          .extracting(SnapshotStoreTest::code)
          .isEqualTo("CORRUPT");
    }
    Files.delete(ws);
    assertThatThrownBy(() -> Parts.verifyAll(store().load("p1")))
        .hasMessageContaining("missing its part workspace.tar");
    Files.createSymbolicLink(ws, home.resolve("elsewhere.tar"));
    Files.write(home.resolve("elsewhere.tar"), good);
    assertThatThrownBy(() -> Parts.verifyAll(store().load("p1")))
        .hasMessageContaining("missing its part workspace.tar");
    Files.delete(ws);
    Files.write(ws, good);
    Parts.verifyAll(store().load("p1"));
    Path session = home.resolve("snapshots/p1/session-0.bin");
    Files.write(session, "pickle!".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> store().load("p1").state()).hasMessageContaining("session-0.bin");
  }

  @Test
  void aPartChangedWhileStreamingFailsTheRead() throws Exception {
    save("p2");
    Loaded l = store().load("p2");
    Parts.verifyAll(l);
    // Checked, then swapped before it is streamed: the second hash catches it.
    Files.write(
        home.resolve("snapshots/p2/workspace.tar"), "WS-BYTES".getBytes(StandardCharsets.UTF_8));
    JsonNode part = l.part("workspace");
    assertThat(part).isNotNull();
    try (Parts.PartReader r = Parts.PartReader.open(l.dir(), part, "p2")) {
      assertThat(r).isNotNull();
      ByteArrayOutputStream sink = new ByteArrayOutputStream();
      assertThatThrownBy(() -> r.transferTo(sink))
          .hasMessageContaining("sha256 does not match")
          .extracting(SnapshotStoreTest::code)
          .isEqualTo("CORRUPT");
    }
    Files.write(
        home.resolve("snapshots/p2/workspace.tar"), "ws-bytes".getBytes(StandardCharsets.UTF_8));
    try (Parts.PartReader r = Parts.PartReader.open(l.dir(), part, "p2")) {
      assertThat(r).isNotNull();
      assertThat(r.readNBytes(3)).isEqualTo("ws-".getBytes(StandardCharsets.UTF_8));
      r.finish(); // the consumer stopped early: the rest is still checked
    }
  }

  @Test
  void partListsThatPointElsewhereAreRefusedEvenWhenSigned() throws Exception {
    save("p3");
    for (String file :
        List.of("../p3x/workspace.tar", "/etc/passwd", "manifest.json", "session-0.bin")) {
      resign("p3", m -> ((ObjectNode) m.path("parts").get(0)).put("file", file));
      assertThatThrownBy(() -> store().load("p3"))
          .as(file)
          .hasMessageContaining("bad kind or file name");
    }
    resign(
        "p3",
        m -> {
          ((ObjectNode) m.path("parts").get(0)).put("file", "workspace.tar");
          ((ObjectNode) m.path("parts").get(2).path("meta")).put("session", "../x");
        });
    assertThatThrownBy(() -> store().load("p3")).hasMessageContaining("bad kind or file name");
  }

  @Test
  void memoryPartNamesStayInsideTheMemoryDirectory() {
    for (String ok :
        List.of("memory/checkpoint.img", "memory/pages_meta.img", "memory/a/b/c/d.img")) {
      assertThat(CheckpointMemory.validMemoryFile(ok)).as(ok).isTrue();
    }
    for (String bad :
        Arrays.asList(
            null,
            "",
            "memory",
            "memory/",
            "checkpoint.img",
            "/memory/checkpoint.img",
            "memory//checkpoint.img",
            "memory/../manifest.json",
            "memory/..",
            "memory/a..b",
            "memory/.hidden",
            "memory/a\\..\\b",
            "memory/a/b/c/d/e.img",
            "memory/x\0.img",
            "memory/" + "a".repeat(101),
            "memory/checkpoint.img/",
            "workspace.tar")) {
      assertThat(CheckpointMemory.validMemoryFile(bad)).as(String.valueOf(bad)).isFalse();
    }
  }

  /** Adds a memory part (as a gVisor save writes one) to saved snapshot {@code name}. */
  byte[] addMemoryPart(String name) throws Exception {
    byte[] img = "checkpoint-image-bytes".getBytes(StandardCharsets.UTF_8);
    Path dir = home.resolve("snapshots/" + name + "/memory");
    Files.createDirectories(dir);
    Files.write(dir.resolve("checkpoint.img"), img);
    resign(
        name,
        m -> {
          ((ArrayNode) m.path("parts"))
              .addObject()
              .put("file", "memory/checkpoint.img")
              .put("kind", "memory")
              .put("size", img.length)
              .put("sha256", SnapshotKey.sha256(img));
          m.put("memory", true);
        });
    return img;
  }

  @Test
  void memoryPartsAreVerifiedPlacedAndRehashed() throws Exception {
    save("m1");
    byte[] img = addMemoryPart("m1");
    Loaded l = store().load("m1");
    Parts.verifyAll(l);
    assertThat(Manifest.info(l.manifest()).memory()).isTrue();
    assertThat(l.state().sessions()).hasSize(1); // the checkpoint image is never read as a session
    JsonNode part = l.part("memory");
    assertThat(part).isNotNull();
    Path into = Files.createDirectory(home.resolve("placed"));
    CheckpointMemory.placeMemoryPart(l.dir(), part, "m1", into);
    assertThat(Files.readAllBytes(into.resolve("checkpoint.img"))).isEqualTo(img);
    // A byte flipped after the save: refused by the check and by the placement's own hash.
    byte[] flipped = img.clone();
    flipped[3] ^= 1;
    Files.write(home.resolve("snapshots/m1/memory/checkpoint.img"), flipped);
    assertThatThrownBy(() -> Parts.verifyAll(store().load("m1")))
        .hasMessageContaining("memory/checkpoint.img whose sha256 does not match")
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("CORRUPT");
    Path again = Files.createDirectory(home.resolve("placed-again"));
    assertThatThrownBy(() -> CheckpointMemory.placeMemoryPart(l.dir(), part, "m1", again))
        .hasMessageContaining("sha256 does not match")
        .hasMessageContaining("snapshot rm m1");
    // The memory directory swapped for a symlink to a good copy: refused too.
    Path elsewhere = Files.createDirectory(home.resolve("elsewhere"));
    Files.write(elsewhere.resolve("checkpoint.img"), img);
    HostFiles.deleteTree(home.resolve("snapshots/m1/memory"));
    Files.createSymbolicLink(home.resolve("snapshots/m1/memory"), elsewhere);
    assertThatThrownBy(() -> Parts.verifyAll(store().load("m1")))
        .hasMessageContaining("which is not a directory");
  }

  @Test
  void aPlacedMemoryPartIsAPrivateCopyThatLaterWritesToTheStoreDoNotReach() throws Exception {
    save("m3");
    byte[] img = addMemoryPart("m3");
    Loaded l = store().load("m3");
    JsonNode part = l.part("memory");
    assertThat(part).isNotNull();
    Path into = Files.createDirectory(home.resolve("placed"));
    CheckpointMemory.placeMemoryPart(l.dir(), part, "m3", into);
    Path placed = into.resolve("checkpoint.img");
    assertThat(Files.getAttribute(placed, "unix:nlink")).as("not a hard link").isEqualTo(1);
    // A writer of the store rewrites the part in place after the second hash, before the
    // runtime reads it: what was placed (and hashed) does not change.
    byte[] evil = new byte[img.length];
    Arrays.fill(evil, (byte) 'X');
    try (var ch =
        FileChannel.open(
            home.resolve("snapshots/m3/memory/checkpoint.img"), StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(evil));
    }
    assertThat(Files.readAllBytes(placed)).isEqualTo(img);
  }

  @Test
  void aMemoryFlagThatDisagreesWithThePartsIsRefusedEvenWhenSigned() throws Exception {
    save("m2");
    resign("m2", m -> m.put("memory", true));
    assertThatThrownBy(() -> store().load("m2"))
        .hasMessageContaining("memory=true but lists 0 memory parts");
    resign("m2", m -> m.put("memory", "yes"));
    assertThatThrownBy(() -> store().load("m2")).hasMessageContaining("memory=");
    resign("m2", m -> m.put("memory", false));
    addMemoryPart("m2");
    resign("m2", m -> m.put("memory", false));
    assertThatThrownBy(() -> store().load("m2"))
        .hasMessageContaining("memory=false but lists 1 memory parts");
    for (String file :
        List.of("memory/../workspace.tar", "/memory/x", "memory/", "checkpoint.img")) {
      resign(
          "m2",
          m -> {
            m.put("memory", true);
            ((ObjectNode) m.path("parts").get(3)).put("file", file);
          });
      assertThatThrownBy(() -> store().load("m2"))
          .as(file)
          .hasMessageContaining("bad kind or file name");
    }
  }

  @Test
  void aChangedImageIsRefusedNamingBothIdsAndTheFix() throws Exception {
    save("i1");
    JsonNode m = store().load("i1").manifest();
    SnapshotRestore.checkImageId("i1", m, Optional.of("sha256:abc"));
    assertThatThrownBy(() -> SnapshotRestore.checkImageId("i1", m, Optional.of("sha256:def")))
        .hasMessageContaining("sha256:abc")
        .hasMessageContaining("sha256:def")
        .hasMessageContaining("docker tag sha256:abc agentnest/python:latest")
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("IMAGE_CHANGED");
    assertThatThrownBy(() -> SnapshotRestore.checkImageId("i1", m, Optional.empty()))
        .hasMessageContaining("no such image");
  }

  @Test
  void existingNamesAreNotOverwrittenWithoutReplace() {
    save("s5");
    assertThatThrownBy(() -> save("s5"))
        .hasMessageContaining("exists")
        .hasMessageContaining("--force")
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("EXISTS");
    SnapshotInfo again = store().write("s5", SandboxConfig.defaults(), "sha256:new", state(), true);
    assertThat(again.imageId()).isEqualTo("sha256:new");
    assertThat(store().list()).extracting(SnapshotInfo::imageId).containsExactly("sha256:new");
    assertThat(store().remove("s5")).isTrue();
    assertThat(store().remove("s5")).isFalse();
    assertThat(store().list()).isEmpty();
    assertThatThrownBy(() -> store().load("s5"))
        .hasMessageContaining("no snapshot 's5'")
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("NOT_FOUND");
  }

  @Test
  void aFailedSaveLeavesNoSnapshot() throws Exception {
    save("f1");
    // The disk fills up half way through the parts of a replacement: the old one stays.
    assertThatThrownBy(
            () ->
                store()
                    .stage(
                        "f1",
                        SandboxConfig.defaults(),
                        "sha256:new",
                        true,
                        null,
                        w -> {
                          try (var p = w.open("workspace.tar", "workspace")) {
                            p.write(new byte[1000]);
                          }
                          throw new IOException("No space left on device");
                        }))
        .hasMessageContaining("No space left on device")
        .hasMessageContaining("disk full");
    assertThat(store().list()).extracting(SnapshotInfo::imageId).containsExactly("sha256:abc");
    assertThat(entries()).containsExactly("f1");
    // And a first save that fails leaves nothing at all.
    assertThatThrownBy(
            () ->
                store()
                    .stage(
                        "f2",
                        SandboxConfig.defaults(),
                        "sha256:abc",
                        false,
                        null,
                        w -> {
                          throw new IOException("No space left on device");
                        }))
        .isInstanceOf(SnapshotException.class);
    assertThat(entries()).containsExactly("f1");
  }

  @Test
  void aSaveIsRefusedBeforeItStartsWhenTheDiskIsBelowItsReserve() throws Exception {
    SnapshotStore low = new SnapshotStore(home.resolve("snapshots"), NO_BACKEND, p -> 100L << 20);
    assertThatThrownBy(
            () -> low.write("d1", SandboxConfig.defaults(), "sha256:abc", state(), false))
        .isInstanceOf(SnapshotException.class)
        .satisfies(e -> assertThat(code(e)).isEqualTo("DISK_FULL"))
        .hasMessageContaining("snapshot 'd1' not saved")
        .hasMessageContaining("only 100.0 MiB free")
        .hasMessageContaining("below the reserve of 512.0 MiB")
        .hasMessageContaining("AGENTNEST_STATE_MIN_FREE_DISK");
    assertThat(entries()).isEmpty();
  }

  @Test
  void aSaveThatWouldFillTheDiskStopsPartWayAndLeavesNothing() throws Exception {
    // Plenty of room when the save starts; then the disk fills (another writer took most of it)
    // while the parts stream in: the guard stops the save before the reserve is touched.
    AtomicInteger probes = new AtomicInteger();
    Path root = home.resolve("snapshots");
    // 600 MiB free once the save runs, less by what the save itself has written.
    SnapshotStore filling =
        new SnapshotStore(
            root,
            NO_BACKEND,
            p -> probes.getAndIncrement() < 2 ? 10L << 30 : (600L << 20) - treeSize(root));
    byte[] mib = new byte[1 << 20];
    long[] written = {0};
    assertThatThrownBy(
            () ->
                filling.stage(
                    "d2",
                    SandboxConfig.defaults(),
                    "sha256:abc",
                    false,
                    null,
                    w -> {
                      // As a save writes what the sandbox sends: a frame (at most 1 MiB) at a time.
                      try (var part = w.open("workspace.tar", "workspace")) {
                        for (int i = 0; i < 1024; i++) {
                          part.write(mib);
                          written[0] += mib.length;
                        }
                      }
                    }))
        .isInstanceOf(SnapshotException.class)
        .satisfies(e -> assertThat(code(e)).isEqualTo("DISK_FULL"))
        .hasMessageContaining("below the reserve");
    // Stopped at the reserve: about 600 - 512 MiB in, not the whole GiB.
    assertThat(written[0]).isLessThan(100L << 20);
    assertThat(entries()).isEmpty();
  }

  @Test
  void aSaveThatCrashedBeforeTheRenameNeverListsAsValid() throws Exception {
    save("c1");
    // What a crash between writing the manifest and the rename leaves: a complete staging dir.
    Path root = home.resolve("snapshots");
    Files.move(root.resolve("c1"), root.resolve(".saving-c2-12345"));
    assertThat(store().list()).isEmpty();
    assertThatThrownBy(() -> store().load("c2"))
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("NOT_FOUND");
    assertThatThrownBy(() -> store().load(".saving-c2-12345")).hasMessageContaining("is invalid");
  }

  @Test
  void manyLargeSessionsStillGiveAManifestThatLoads() throws Exception {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 5000; i++) {
      names.add("v".repeat(150) + i);
    }
    List<SandboxState.Session> sessions = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      sessions.add(new SandboxState.Session("s" + i, new byte[] {1}, 0, names, List.of()));
    }
    SandboxState.Captured many = new SandboxState.Captured(new byte[0], new byte[0], sessions);
    store().write("many", SandboxConfig.defaults(), "sha256:abc", many, false);
    Loaded l = store().load("many");
    JsonNode meta = l.manifest().path("parts").get(2).path("meta");
    assertThat(meta.path("variables_count").asInt()).isEqualTo(5000);
    assertThat(meta.path("variables").size()).isLessThanOrEqualTo(Manifest.MAX_LISTED);
    assertThat(Files.size(manifest("many"))).isLessThan(2L << 20);
    assertThat(l.state().sessions()).hasSize(60);
  }

  @Test
  void leftoversOfCrashedSavesAreFoundByAge() throws Exception {
    save("l1");
    Path root = home.resolve("snapshots");
    Path stale = Files.createDirectories(root.resolve(".saving-l2-1"));
    Files.write(stale.resolve("workspace.tar"), new byte[123]);
    Files.createDirectories(root.resolve(".saving-l3-2"));
    Instant now = Instant.now();
    Files.setLastModifiedTime(stale, FileTime.from(now.minusSeconds(7200)));
    List<SnapshotStore.Leftover> found = store().leftovers(Duration.ofHours(1), now);
    assertThat(found).extracting(SnapshotStore.Leftover::name).containsExactly(".saving-l2-1");
    assertThat(found.get(0).bytes()).isEqualTo(123);
    store().removeLeftover(found.get(0));
    assertThat(entries()).containsExactlyInAnyOrder("l1", ".saving-l3-2");
  }

  @Test
  void secretValuesNeverReachTheDisk() throws Exception {
    SandboxConfig c =
        SandboxConfig.builder().secretEnv("API_TOKEN", Secret.of("tok-very-secret-123")).build();
    SandboxState.Captured leaky =
        new SandboxState.Captured(
            "ws".getBytes(StandardCharsets.UTF_8),
            new byte[0],
            List.of(
                new SandboxState.Session(
                    "default",
                    "\u008c\u0013tok-very-secret-123".getBytes(StandardCharsets.UTF_8),
                    0,
                    List.of("tok"),
                    List.of())));
    assertThatThrownBy(() -> store().write("leak", c, "sha256:abc", leaky, false))
        .hasMessageContaining("API_TOKEN")
        .hasMessageContaining("Python session 'default'")
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("SECRET");
    assertThat(store().list()).isEmpty();
    assertThat(entries()).isEmpty();
    // Without the value anywhere, the save goes ahead and keeps only the secret's name.
    store().write("clean", c, "sha256:abc", state(), false);
    for (Path f : Files.list(home.resolve("snapshots/clean")).toList()) {
      assertThat(Files.readString(f, StandardCharsets.ISO_8859_1))
          .doesNotContain("tok-very-secret-123");
    }
    assertThat(Files.readString(manifest("clean"))).contains("API_TOKEN");
  }

  @Test
  void secretScanFindsValuesAcrossChunkBorders() {
    byte[] secret = "s3cr3t-value".getBytes(StandardCharsets.UTF_8);
    byte[] data = ("....." + "s3cr3t-value" + "....").getBytes(StandardCharsets.UTF_8);
    for (int split = 0; split <= data.length; split++) {
      SecretScan scan = new SecretScan(Map.of("K", secret));
      scan.update(data, 0, split);
      scan.update(data, split, data.length - split);
      assertThat(scan.found()).as("split " + split).isEqualTo("K");
    }
    SecretScan byteWise = new SecretScan(Map.of("K", secret));
    for (int i = 0; i < data.length; i++) {
      byteWise.update(data, i, 1);
    }
    assertThat(byteWise.found()).isEqualTo("K");
    SecretScan none = new SecretScan(Map.of("K", secret));
    none.update("s3cr3t-valu".getBytes(StandardCharsets.UTF_8), 0, 11);
    none.update("E".getBytes(StandardCharsets.UTF_8), 0, 1);
    assertThat(none.found()).isNull();
  }

  @Test
  void secretScanFindsEveryEncodedFormAtEveryChunkBorder() {
    String value = "s3cr3t-value/with+odd";
    byte[] raw = value.getBytes(StandardCharsets.UTF_8);
    byte[] lineLong = ("x".repeat(57) + value).getBytes(StandardCharsets.UTF_8);
    for (String form :
        List.of(
            Base64.getEncoder().encodeToString(("ab" + value).getBytes(StandardCharsets.UTF_8)),
            Base64.getMimeEncoder().encodeToString(lineLong), // wrapped at 76
            HexFormat.of().formatHex(raw),
            URLEncoder.encode(value, StandardCharsets.UTF_8))) {
      byte[] data = ("data: " + form + "\n").getBytes(StandardCharsets.UTF_8);
      for (int split = 0; split <= data.length; split++) {
        SecretScan scan = new SecretScan(Map.of("K", raw));
        scan.update(data, 0, split);
        scan.update(data, split, data.length - split);
        assertThat(scan.found()).as("%s split %d", form, split).isEqualTo("K");
      }
    }
  }

  @Test
  void hostileNamesAreRefused() {
    for (String bad :
        List.of(
            "",
            "../x",
            "/abs",
            "a/b",
            ".hidden",
            "x".repeat(101),
            "a\0b",
            "..",
            "a..b",
            "a b",
            "a\nb",
            "ü",
            "-rf",
            "~root",
            "a\\b")) {
      assertThatThrownBy(() -> SnapshotStore.checkName(bad))
          .as(bad)
          .hasMessageContaining("is invalid")
          .extracting(SnapshotStoreTest::code)
          .isEqualTo("BAD_NAME");
      assertThatThrownBy(() -> store().load(bad)).as(bad).hasMessageContaining("is invalid");
      assertThatThrownBy(() -> store().remove(bad)).as(bad).hasMessageContaining("is invalid");
    }
    assertThat(SnapshotStore.checkName("after-training.v2_1")).isEqualTo("after-training.v2_1");
    assertThat(SnapshotStore.checkName("x".repeat(100))).hasSize(100);
  }

  @Property(tries = 1000)
  void acceptedNamesNeverLeaveTheStore(
      @ForAll
          @StringLength(max = 120)
          @Chars({'.', '/', '\\', '\0', 'a', 'Z', '0', '-', '_', ' ', '~'})
          String name) {
    try {
      SnapshotStore.checkName(name);
    } catch (SnapshotException refused) {
      assertThat(refused.code()).isEqualTo("BAD_NAME");
      return;
    }
    Path root = Path.of("/store");
    Path resolved = root.resolve(name).normalize();
    assertThat(resolved.getParent()).isEqualTo(root);
    assertThat(resolved.getFileName().toString()).isEqualTo(name).doesNotStartWith(".");
  }

  @Property(tries = 300)
  void arbitraryNamesNeverLeaveTheStore(@ForAll String name) {
    try {
      SnapshotStore.checkName(name);
    } catch (SnapshotException refused) {
      return;
    }
    Path root = Path.of("/store");
    assertThat(root.resolve(name).normalize().getParent()).isEqualTo(root);
  }

  @Test
  void configIsSavedWithoutSecretValuesAndComesBack() {
    SandboxConfig c =
        SandboxConfig.builder()
            .secretEnv("TOKEN", Secret.of("very-secret-value"))
            .env("PLAIN", "1")
            .network(NetworkPolicy.allowlist("pypi.org"))
            .label("team", "search")
            .execTimeout(Duration.ofSeconds(7))
            .ttl(Duration.ofMinutes(9))
            .approvals(ApprovalPolicy.recommended())
            .build();
    String json = ConfigCodec.toJson(c).toString();
    assertThat(json).contains("TOKEN", "PLAIN", "pypi.org").doesNotContain("very-secret-value");
    var m = Json.object();
    m.set("config", ConfigCodec.toJson(c));
    SandboxConfig back = Manifest.savedConfig(m, "x");
    assertThat(back.env()).containsEntry("PLAIN", "1");
    assertThat(back.secretEnv()).isEmpty();
    assertThat(back.network().rules()).contains("pypi.org");
    assertThat(back.memoryBytes()).isEqualTo(c.memoryBytes());
    assertThat(back.labels()).containsEntry("team", "search");
    assertThat(back.execTimeout()).isEqualTo(Duration.ofSeconds(7));
    assertThat(back.ttl()).isEqualTo(Duration.ofMinutes(9));
    assertThat(back.approvals()).isEqualTo(ApprovalPolicy.recommended());
    assertThat(back.workdir()).isEqualTo(c.workdir());
    assertThat(back.readOnlyRootFilesystem()).isTrue();
  }

  @Test
  void aSignedConfigThisVersionRefusesIsReportedAsCorrupt() throws Exception {
    save("k1");
    resign(
        "k1", m -> ((ObjectNode) m.path("config").path("approvals")).put("file_deletion", "MAYBE"));
    JsonNode m = store().load("k1").manifest();
    assertThatThrownBy(() -> Manifest.savedConfig(m, "k1"))
        .hasMessageContaining("config this version refuses")
        .extracting(SnapshotStoreTest::code)
        .isEqualTo("CORRUPT");
    assertThat(store().list()).isEmpty();
  }

  private static long treeSize(Path root) throws IOException {
    try (Stream<Path> s = Files.walk(root)) {
      long total = 0;
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        total += Files.size(p);
      }
      return total;
    }
  }

  private Set<String> entries() throws Exception {
    Set<String> out = new HashSet<>();
    Path root = home.resolve("snapshots");
    if (Files.isDirectory(root)) {
      try (var s = Files.list(root)) {
        s.forEach(p -> out.add(p.getFileName().toString()));
      }
    }
    return out;
  }
}
