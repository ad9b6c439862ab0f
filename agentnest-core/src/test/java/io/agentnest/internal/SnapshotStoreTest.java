package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnapshotStoreTest {
  @TempDir Path home;

  SnapshotStore store() {
    return new SnapshotStore(home.resolve("snapshots"));
  }

  static SandboxState.Captured state() {
    return new SandboxState.Captured(
        "ws-bytes".getBytes(),
        "tmp".getBytes(),
        List.of(
            new SandboxState.Session("default", "pickle".getBytes(), 0, List.of("x"), List.of())));
  }

  SnapshotInfo save(String name) {
    return store().write(name, SandboxConfig.defaults(), "sha256:abc", state(), false);
  }

  @Test
  void writesSignedManifestAndReadsItBack() throws Exception {
    SnapshotInfo info = save("s1");
    assertThat(info.bytes()).isEqualTo(8 + 3 + 6);
    assertThat(info.sessions()).containsExactly("default");
    SandboxState.Captured back = store().load("s1").state();
    assertThat(back.workspace()).isEqualTo("ws-bytes".getBytes());
    assertThat(back.sessions().get(0).data()).isEqualTo("pickle".getBytes());
    assertThat(back.sessions().get(0).variables()).containsExactly("x");
    assertThat(store().list()).extracting(SnapshotInfo::name).containsExactly("s1");
    assertThat(Files.getPosixFilePermissions(home.resolve("snapshot.key")))
        .isEqualTo(PosixFilePermissions.fromString("rw-------"));
  }

  @Test
  void everyManifestFieldIsCoveredBySignature() throws Exception {
    save("s2");
    Path mf = home.resolve("snapshots/s2/manifest.json");
    String original = Files.readString(mf);
    for (String[] edit :
        new String[][] {
          {"\"image_id\":\"sha256:abc\"", "\"image_id\":\"sha256:abd\""},
          {"\"size\":8", "\"size\":9"},
          {"\"name\":\"s2\"", "\"name\":\"s3\""},
          {"\"memory\":false", "\"memory\":true"},
        }) {
      assertThat(original).contains(edit[0]);
      Files.writeString(mf, original.replace(edit[0], edit[1]));
      assertThatThrownBy(() -> store().load("s2"))
          .isInstanceOf(SnapshotException.class)
          .extracting(e -> ((SnapshotException) e).code())
          .isEqualTo("TAMPERED");
    }
    Files.writeString(mf, "{not json");
    assertThatThrownBy(() -> store().load("s2")).hasMessageContaining("unreadable manifest");
    assertThat(store().list()).isEmpty();
  }

  @Test
  void anotherInstallationsKeyIsRefused() throws Exception {
    save("s4");
    Files.delete(home.resolve("snapshot.key"));
    assertThatThrownBy(() -> store().load("s4"))
        .hasMessageContaining("modified after it was saved");
  }

  @Test
  void existingNamesAreNotOverwrittenWithoutReplace() {
    save("s5");
    assertThatThrownBy(() -> save("s5")).hasMessageContaining("exists");
    SnapshotInfo again = store().write("s5", SandboxConfig.defaults(), "sha256:new", state(), true);
    assertThat(again.imageId()).isEqualTo("sha256:new");
    assertThat(store().remove("s5")).isTrue();
    assertThat(store().list()).isEmpty();
  }

  @Test
  void aFailedSaveLeavesNoSnapshot() throws Exception {
    SandboxState.Captured huge =
        new SandboxState.Captured(
            new byte[0],
            new byte[0],
            List.of(
                new SandboxState.Session("a", new byte[1], 0, List.of(), List.of()),
                new SandboxState.Session("b", new byte[1], 0, List.of(), List.of())));
    // A name that is valid but whose target is a file: the final move fails.
    Files.createDirectories(home.resolve("snapshots"));
    Files.writeString(home.resolve("snapshots/blocked"), "x");
    assertThatThrownBy(
            () -> store().write("blocked", SandboxConfig.defaults(), "sha256:abc", huge, false))
        .isInstanceOf(SnapshotException.class);
    try (var s = Files.list(home.resolve("snapshots"))) {
      assertThat(s.map(p -> p.getFileName().toString())).containsExactly("blocked");
    }
  }

  @Test
  void hostileNamesAreRefused() {
    for (String bad :
        List.of("", "../x", "/abs", "a/b", ".hidden", "x".repeat(101), "a\0b", "..")) {
      assertThatThrownBy(() -> SnapshotStore.checkName(bad))
          .as(bad)
          .hasMessageContaining("is invalid");
    }
    assertThat(SnapshotStore.checkName("after-training.v2_1")).isEqualTo("after-training.v2_1");
  }

  @Property(tries = 500)
  void acceptedNamesNeverLeaveTheStore(@ForAll String name) {
    try {
      SnapshotStore.checkName(name);
    } catch (SnapshotException refused) {
      return;
    }
    Path root = Path.of("/store");
    assertThat(root.resolve(name).normalize().getParent()).isEqualTo(root);
  }

  @Test
  void configIsSavedWithoutSecretValues() {
    SandboxConfig c =
        SandboxConfig.builder()
            .secretEnv("TOKEN", io.agentnest.Secret.of("very-secret-value"))
            .env("PLAIN", "1")
            .network(io.agentnest.NetworkPolicy.allowlist("pypi.org"))
            .build();
    String json = SnapshotStore.configJson(c).toString();
    assertThat(json).contains("TOKEN", "PLAIN", "pypi.org").doesNotContain("very-secret-value");
    var m = io.agentnest.internal.Json.object();
    m.set("config", SnapshotStore.configJson(c));
    SandboxConfig back = SnapshotStore.savedConfig(m, "x");
    assertThat(back.env()).containsEntry("PLAIN", "1");
    assertThat(back.network().rules()).contains("pypi.org");
    assertThat(back.memoryBytes()).isEqualTo(c.memoryBytes());
  }
}
