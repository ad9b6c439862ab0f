package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.internal.audit.Audit;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Save a real sandbox, destroy it, start it again from the store: here and in another JVM. */
@ExtendWith(DockerEngineRequired.class)
class SnapshotIT {
  @TempDir static Path home;
  static TestHome isolated;

  @BeforeAll
  static void isolatedHome() {
    isolated = TestHome.use(home);
  }

  @AfterAll
  static void back() {
    isolated.close();
  }

  static void makeState(Sandbox sb) {
    sb.files().write("data/in.csv", "a,b\n1,2\n");
    sb.exec("echo scratch > /tmp/scratch.txt");
    sb.runCode(
        "import json\n"
            + "total = 41\n"
            + "def bump(x):\n"
            + "    return x + 1\n"
            + "class Model:\n"
            + "    def __init__(self, w): self.w = w\n"
            + "m = Model([1, 2, 3])\n");
    sb.pythonSession("other").run("side = 'kept'");
  }

  static void assertState(Sandbox sb) {
    assertThat(sb.files().readString("data/in.csv")).isEqualTo("a,b\n1,2\n");
    assertThat(sb.exec("cat /tmp/scratch.txt").stdout()).isEqualTo("scratch\n");
    assertThat(sb.runCode("bump(total), m.w, json.dumps([1])").result())
        .isEqualTo("(42, [1, 2, 3], '[1]')");
    assertThat(sb.pythonSession("other").run("side").result()).isEqualTo("'kept'");
  }

  @Test
  void savedSandboxComesBackWithFilesAndSessions() {
    SnapshotInfo info;
    String source;
    String restoredId;
    try (Sandbox sb = Sandbox.create()) {
      source = sb.id();
      makeState(sb);
      info = sb.snapshot("it-basic");
      assertThatThrownBy(() -> sb.snapshot("it-basic"))
          .isInstanceOf(SnapshotException.class)
          .hasMessageContaining("exists")
          .hasMessageContaining("--force");
      assertThat(sb.snapshot("it-basic", true).name()).isEqualTo("it-basic");
    }
    assertThat(info.sessions()).contains("default", "other");
    assertThat(info.imageId()).startsWith("sha256:");
    assertThat(Sandbox.snapshots()).extracting(SnapshotInfo::name).contains("it-basic");
    try (Sandbox restored = Sandbox.restore("it-basic")) {
      restoredId = restored.id();
      assertState(restored);
      // Independent of the snapshot: changes stay in this sandbox.
      restored.runCode("total = 0");
    }
    try (Sandbox again = Sandbox.restore("it-basic")) {
      assertThat(again.runCode("total").result()).isEqualTo("41");
    }
    assertThat(Sandbox.removeSnapshot("it-basic")).isTrue();
    assertThat(Sandbox.removeSnapshot("it-basic")).isFalse();
    assertThatThrownBy(() -> Sandbox.restore("it-basic")).hasMessageContaining("no snapshot");
    AuditLog audit = Audit.shared();
    audit.flush();
    assertThat(
            audit.query(
                AuditQuery.builder()
                    .sandbox(source)
                    .type(AuditEvent.SNAPSHOT_SAVED, AuditEvent.SNAPSHOT_REMOVED)
                    .build()))
        .extracting(AuditEvent::type)
        .containsExactlyInAnyOrder(
            AuditEvent.SNAPSHOT_SAVED, AuditEvent.SNAPSHOT_SAVED, AuditEvent.SNAPSHOT_REMOVED);
    assertThat(
            audit.query(
                AuditQuery.builder()
                    .sandbox(restoredId)
                    .type(AuditEvent.SNAPSHOT_RESTORED)
                    .build()))
        .singleElement()
        .satisfies(e -> assertThat(e.data()).containsEntry("from_sandbox", source));
  }

  @Test
  void anotherProcessRestoresWhatThisOneSaved() throws Exception {
    try (Sandbox sb = Sandbox.create()) {
      makeState(sb);
      sb.snapshot("it-cross");
    }
    Process p =
        ChildJvm.start(Restorer.class, Map.of("AGENTNEST_HOME", home.toString()), "it-cross");
    List<String> lines = ChildJvm.readUntil(p, "result", 20);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(lines).contains("result (42, [1, 2, 3], '[1]') a,b");
  }

  @Test
  void tamperedOrTruncatedSnapshotsAreRefused() throws Exception {
    try (Sandbox sb = Sandbox.create()) {
      sb.runCode("x = 1");
      sb.snapshot("it-tamper");
    }
    Path dir = home.resolve("snapshots/it-tamper");
    Path mf = dir.resolve("manifest.json");
    String original = Files.readString(mf);
    Files.writeString(
        mf, original.replace("\"image\":\"agentnest/python:latest\"", "\"image\":\"evil:1\""));
    assertThatThrownBy(() -> Sandbox.restore("it-tamper"))
        .isInstanceOf(SnapshotException.class)
        .hasMessageContaining("modified after it was saved");
    Files.writeString(mf, original);
    Path ws = dir.resolve("workspace.tar");
    byte[] tar = Files.readAllBytes(ws);
    Files.write(ws, Arrays.copyOf(tar, tar.length / 2));
    assertThatThrownBy(() -> Sandbox.restore("it-tamper"))
        .hasMessageContaining("bytes, the manifest says");
    tar[tar.length - 1] ^= 1;
    Files.write(ws, tar);
    assertThatThrownBy(() -> Sandbox.restore("it-tamper")).hasMessageContaining("sha256");
    Files.delete(ws);
    assertThatThrownBy(() -> Sandbox.restore("it-tamper")).hasMessageContaining("missing its part");
    assertThatThrownBy(() -> Sandbox.restore("../etc")).hasMessageContaining("is invalid");
  }

  @Test
  void secretsAreNeverStoredAndMustBeGivenAgain() throws Exception {
    SandboxConfig withSecret =
        SandboxConfig.builder().secretEnv("API_TOKEN", Secret.of("tok-very-secret-123")).build();
    try (Sandbox sb = Sandbox.create(withSecret)) {
      sb.runCode("y = 2");
      sb.snapshot("it-secret");
    }
    try (var files = Files.walk(home.resolve("snapshots/it-secret"))) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        assertThat(new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1))
            .as(f.toString())
            .doesNotContain("tok-very-secret-123");
      }
    }
    assertThatThrownBy(() -> Sandbox.restore("it-secret"))
        .hasMessageContaining("API_TOKEN")
        .hasMessageContaining("never written to disk");
    try (Sandbox sb = Sandbox.restore("it-secret", withSecret)) {
      assertThat(sb.runCode("y").result()).isEqualTo("2");
    }
    assertThatThrownBy(
            () ->
                Sandbox.restore(
                    "it-secret",
                    SandboxConfig.builder().image("agentnest-test/nopython:1").build()))
        .hasMessageContaining("same image");
  }

  @Test
  void aChangedImageIsRefusedEvenWithAValidSignature() throws Exception {
    try (Sandbox sb = Sandbox.create()) {
      sb.runCode("z = 3");
      sb.snapshot("it-image");
    }
    // Whoever holds the key can sign anything: here, a manifest naming another image id, as if
    // the image had been rebuilt under the same name since the save.
    Path mf = home.resolve("snapshots/it-image/manifest.json");
    ObjectNode signed = (ObjectNode) Json.MAPPER.readTree(Files.readAllBytes(mf));
    ObjectNode m = (ObjectNode) signed.get("manifest");
    String realId = m.path("image_id").asText();
    m.put("image_id", "sha256:" + "0".repeat(64));
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(Files.readAllBytes(home.resolve("snapshot.key")), "HmacSHA256"));
    signed.put(
        "hmac_sha256", HexFormat.of().formatHex(mac.doFinal(Json.MAPPER.writeValueAsBytes(m))));
    Files.write(mf, Json.MAPPER.writeValueAsBytes(signed));
    int before = Sandbox.list().size();
    assertThatThrownBy(() -> Sandbox.restore("it-image"))
        .isInstanceOf(SnapshotException.class)
        .hasMessageContaining("changed since snapshot 'it-image'")
        .hasMessageContaining("sha256:" + "0".repeat(64))
        .hasMessageContaining(realId)
        .hasMessageContaining("take a new snapshot")
        .extracting(e -> ((SnapshotException) e).code())
        .isEqualTo("IMAGE_CHANGED");
    assertThat(Sandbox.list()).hasSizeLessThanOrEqualTo(before);
  }

  @Test
  void aSecretValueInASessionVariableIsNeverSaved() {
    SandboxConfig withSecret =
        SandboxConfig.builder().secretEnv("API_TOKEN", Secret.of("tok-leaky-secret-456")).build();
    try (Sandbox sb = Sandbox.create(withSecret)) {
      sb.runCode("import os\ntok = os.environ['API_TOKEN']");
      assertThatThrownBy(() -> sb.snapshot("it-leak"))
          .hasMessageContaining("API_TOKEN")
          .hasMessageContaining("Python session 'default'")
          .extracting(e -> ((SnapshotException) e).code())
          .isEqualTo("SECRET");
      assertThat(Sandbox.snapshots()).extracting(SnapshotInfo::name).doesNotContain("it-leak");
      sb.runCode("del tok");
      assertThat(sb.snapshot("it-leak").name()).isEqualTo("it-leak");
    }
    assertThat(Sandbox.removeSnapshot("it-leak")).isTrue();
  }

  @Test
  void anotherHandleOnTheSandboxSavesEverySessionItRuns() {
    Sandbox sb = Sandbox.create();
    try {
      makeState(sb);
      sb.detach();
      // Like 'agentnest snapshot save ID': a handle that never used the named session itself.
      try (Sandbox other = Sandbox.connect(sb.id())) {
        SnapshotInfo info = other.snapshot("it-connected");
        assertThat(info.sessions()).contains("default", "other");
      }
    } finally {
      sb.destroy();
    }
    try (Sandbox restored = Sandbox.restore("it-connected")) {
      assertState(restored);
    }
    assertThat(Sandbox.removeSnapshot("it-connected")).isTrue();
  }

  /**
   * On gVisor a snapshot also holds the checkpoint of the whole sandbox: live objects that cannot
   * be pickled (a generator part way through, an open file, a running thread) come back.
   */
  @Nested
  @ExtendWith(GvisorRequired.class)
  class OnGvisor {
    final SandboxConfig gvisor = SandboxConfig.builder().runtime("gvisor").build();

    static final String LIVE_STATE =
        "import threading, time\n"
            + "gen = (i * i for i in range(10))\nnext(gen)\n"
            + "fh = open('/workspace/f.txt')\n"
            + "ticks = []\n"
            + "t = threading.Thread(target=lambda: [ticks.append(1) or time.sleep(0.05)"
            + " for _ in range(100000)], daemon=True)\nt.start()\n";

    @Test
    void processMemoryIsSavedAndComesBackHereAndInAnotherJvm() throws Exception {
      SnapshotInfo info;
      String source;
      try (Sandbox sb = Sandbox.create(gvisor)) {
        source = sb.id();
        makeState(sb);
        sb.exec("echo parent > /workspace/f.txt");
        sb.runCode(LIVE_STATE);
        sb.snapshot("it-gvisor-mem");
        assertThat(sb.runCode("next(gen), t.is_alive()").result())
            .as("the sandbox runs on after the save, with its memory")
            .isEqualTo("(1, True)");
        // A sandbox that was restored from a checkpoint (in place, by the save) saves again.
        info = sb.snapshot("it-gvisor-mem", true);
        assertState(sb);
      }
      assertThat(info.memory()).isTrue();
      assertThat(info.memoryNote()).startsWith("process memory captured");
      assertThat(info.runtime()).isIn("gvisor", "runsc");
      JsonNode m =
          Json.MAPPER
              .readTree(home.resolve("snapshots/it-gvisor-mem/manifest.json").toFile())
              .path("manifest");
      assertThat(m.path("memory").asBoolean()).isTrue();
      List<String> memoryFiles = new ArrayList<>();
      for (JsonNode p : m.path("parts")) {
        if (p.path("kind").asText().equals("memory")) {
          memoryFiles.add(p.path("file").asText());
          assertThat(p.path("size").asLong()).isPositive();
          assertThat(p.path("sha256").asText()).hasSize(64);
        }
      }
      assertThat(memoryFiles).isNotEmpty().allMatch(f -> f.startsWith("memory/"));
      assertThat(m.path("parts").findValuesAsText("kind")).contains("workspace", "session");

      String restoredId;
      try (Sandbox r = Sandbox.restore("it-gvisor-mem")) {
        restoredId = r.id();
        assertThat(r.runCode("next(gen), fh.read(), t.is_alive(), len(ticks) > 0").result())
            .as("generator, open file and thread come back")
            .isEqualTo("(4, 'parent\\n', True, True)");
        assertState(r);
        r.runCode("only_here = 1");
      }
      Process p =
          ChildJvm.start(
              MemoryRestorer.class, Map.of("AGENTNEST_HOME", home.toString()), "it-gvisor-mem");
      List<String> lines = ChildJvm.readUntil(p, "result", 20);
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
      assertThat(lines).contains("result (4, 'parent\\n', True, False) a,b");

      AuditLog audit = Audit.shared();
      audit.flush();
      assertThat(
              audit.query(
                  AuditQuery.builder()
                      .sandbox(restoredId)
                      .type(AuditEvent.SNAPSHOT_RESTORED)
                      .build()))
          .singleElement()
          .satisfies(
              e ->
                  assertThat(e.data())
                      .containsEntry("from_sandbox", source)
                      .containsEntry("memory_restored", true));

      // On runc the checkpoint cannot be used: files and pickled sessions come back instead.
      try (Sandbox r =
          Sandbox.restore("it-gvisor-mem", info.config().toBuilder().runtime("runc").build())) {
        assertState(r);
        assertThat(r.runCode("'gen' in globals()").result()).isEqualTo("False");
        audit.flush();
        assertThat(
                audit.query(
                    AuditQuery.builder()
                        .sandbox(r.id())
                        .type(AuditEvent.SNAPSHOT_RESTORED)
                        .build()))
            .singleElement()
            .satisfies(
                e ->
                    assertThat(e.data())
                        .containsEntry("memory_restored", false)
                        .hasEntrySatisfying(
                            "memory_reason",
                            v -> assertThat(String.valueOf(v)).contains("only on gVisor")));
      }
      assertThat(Sandbox.removeSnapshot("it-gvisor-mem")).isTrue();
    }

    @Test
    void aTamperedMemoryPartIsRefused() throws Exception {
      SnapshotInfo info;
      try (Sandbox sb = Sandbox.create(gvisor)) {
        sb.runCode("x = 1");
        info = sb.snapshot("it-gvisor-tamper");
      }
      assertThat(info.memory()).isTrue();
      Path img;
      try (var files = Files.walk(home.resolve("snapshots/it-gvisor-tamper/memory"))) {
        img = files.filter(Files::isRegularFile).findFirst().orElseThrow();
      }
      byte[] good = Files.readAllBytes(img);
      byte[] bad = good.clone();
      bad[bad.length / 2] ^= 1;
      Files.write(img, bad);
      int before = Sandbox.list().size();
      assertThatThrownBy(() -> Sandbox.restore("it-gvisor-tamper"))
          .isInstanceOf(SnapshotException.class)
          .hasMessageContaining("memory/")
          .hasMessageContaining("sha256 does not match the manifest")
          .hasMessageContaining("agentnest snapshot rm it-gvisor-tamper")
          .extracting(e -> ((SnapshotException) e).code())
          .isEqualTo("CORRUPT");
      Files.delete(img);
      assertThatThrownBy(() -> Sandbox.restore("it-gvisor-tamper"))
          .hasMessageContaining("missing its part memory/");
      assertThat(Sandbox.list()).hasSizeLessThanOrEqualTo(before);
      Files.write(img, good);
      try (Sandbox r = Sandbox.restore("it-gvisor-tamper")) {
        assertThat(r.runCode("x").result()).isEqualTo("1");
      }
      // Other environment variables cannot go into saved memory: files and sessions instead.
      try (Sandbox r =
          Sandbox.restore(
              "it-gvisor-tamper", info.config().toBuilder().env("EXTRA", "yes").build())) {
        assertThat(r.runCode("import os\nx, os.environ['EXTRA']").result()).isEqualTo("(1, 'yes')");
      }
      assertThat(Sandbox.removeSnapshot("it-gvisor-tamper")).isTrue();
    }

    @Test
    void withSecretsTheMemoryIsNotSavedAndTheNoteSaysWhy() {
      SandboxConfig withSecret =
          gvisor.toBuilder().secretEnv("API_TOKEN", Secret.of("tok-gvisor-secret-789")).build();
      SnapshotInfo info;
      try (Sandbox sb = Sandbox.create(withSecret)) {
        makeState(sb);
        info = sb.snapshot("it-gvisor-secret");
      }
      assertThat(info.memory()).isFalse();
      assertThat(info.memoryNote()).contains("secret environment variables");
      try (Sandbox r = Sandbox.restore("it-gvisor-secret", withSecret)) {
        assertState(r);
      }
      assertThat(Sandbox.removeSnapshot("it-gvisor-secret")).isTrue();
    }

    @Test
    void anAttachedHandleSavesFilesAndSessionsAndTheRuntimeButNoMemory() {
      Sandbox sb = Sandbox.create(gvisor);
      SnapshotInfo info;
      try {
        makeState(sb);
        sb.detach();
        // Like 'agentnest snapshot save ID': the handle does not know the sandbox's secrets.
        try (Sandbox other = Sandbox.connect(sb.id())) {
          info = other.snapshot("it-gvisor-attached");
        }
      } finally {
        sb.destroy();
      }
      assertThat(info.memory()).isFalse();
      assertThat(info.memoryNote()).contains("attached", "secret environment variables");
      assertThat(info.runtime()).isEqualTo("runsc");
      try (Sandbox r = Sandbox.restore("it-gvisor-attached")) {
        assertState(r);
        assertThat(Sandbox.list())
            .filteredOn(i -> i.id().equals(r.id()))
            .singleElement()
            .satisfies(i -> assertThat(i.runtime()).isEqualTo("runsc"));
      }
      assertThat(Sandbox.removeSnapshot("it-gvisor-attached")).isTrue();
    }
  }

  /** Restores a gVisor snapshot with memory in a fresh JVM and prints its live objects. */
  public static final class MemoryRestorer {
    public static void main(String[] args) {
      try (Sandbox sb = Sandbox.restore(args[0])) {
        System.out.println(
            "result "
                + sb.runCode("next(gen), fh.read(), t.is_alive(), 'only_here' in globals()")
                    .result()
                + " "
                + sb.files().readString("data/in.csv").lines().findFirst().orElse(""));
      }
    }
  }

  /** Restores a snapshot in a fresh JVM and prints what it finds. */
  public static final class Restorer {
    public static void main(String[] args) {
      try (Sandbox sb = Sandbox.restore(args[0])) {
        System.out.println(
            "result "
                + sb.runCode("bump(total), m.w, json.dumps([1])").result()
                + " "
                + sb.files().readString("data/in.csv").lines().findFirst().orElse(""));
      }
    }
  }
}
