package io.agentnest.internal.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.HostFiles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer of the snapshot store who cannot read the key can no longer roll a name back: an older,
 * validly signed copy put back, a removed snapshot brought back, or a snapshot directory swapped
 * for a symlink is refused; the signed index beside the key says which manifest is the latest.
 */
class SnapshotRollbackTest {
  @TempDir Path home;

  SnapshotStore store() {
    return new SnapshotStore(home.resolve("snapshots"), SnapshotStoreTest.NO_BACKEND);
  }

  SnapshotInfo save(String name, String workspace, boolean replace) {
    return store()
        .write(
            name,
            SandboxConfig.defaults(),
            "sha256:abc",
            new SandboxState.Captured(
                workspace.getBytes(StandardCharsets.UTF_8), new byte[0], List.of()),
            replace);
  }

  Path dir(String name) {
    return home.resolve("snapshots").resolve(name);
  }

  /** What an attacker with write access to the store does: copy a snapshot's directory. */
  static void copyTree(Path from, Path to) throws Exception {
    try (Stream<Path> s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path t = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
        } else {
          Files.copy(p, t, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
  }

  static String code(Throwable e) {
    return ((SnapshotException) e).code();
  }

  @Test
  void anOlderSignedCopyPutBackAfterAForcedSaveIsRefused() throws Exception {
    save("fitted", "old model", false);
    Path backup = home.resolve("backup");
    copyTree(dir("fitted"), backup);
    save("fitted", "new model", true);
    assertThat(store().load("fitted").state().workspace()).asString().isEqualTo("new model");

    HostFiles.deleteTree(dir("fitted"));
    copyTree(backup, dir("fitted"));

    assertThatThrownBy(() -> store().load("fitted"))
        .hasMessageContaining("not the one last saved under this name")
        .hasMessageContaining("generation 1")
        .hasMessageContaining("the latest is 2")
        .hasMessageContaining("snapshot rm fitted")
        .extracting(SnapshotRollbackTest::code)
        .isEqualTo("TAMPERED");
    assertThat(store().list()).as("ls leaves it out").isEmpty();
  }

  @Test
  void aRemovedSnapshotBroughtBackIsRefused() throws Exception {
    save("gone", "data", false);
    Path backup = home.resolve("backup");
    copyTree(dir("gone"), backup);
    assertThat(store().remove("gone")).isTrue();
    copyTree(backup, dir("gone"));
    assertThatThrownBy(() -> store().load("gone"))
        .hasMessageContaining("has no snapshot of that name: it was removed")
        .extracting(SnapshotRollbackTest::code)
        .isEqualTo("TAMPERED");
    // Saving the name again (replacing the refused copy) makes a new latest one.
    save("gone", "again", true);
    assertThat(store().load("gone").state().workspace()).asString().isEqualTo("again");
  }

  @Test
  void aSnapshotDirectoryReplacedByASymlinkIsRefusedEvenWhenItPointsAtTheLatestCopy()
      throws Exception {
    save("linked", "data", false);
    Path elsewhere = home.resolve("elsewhere");
    Files.move(dir("linked"), elsewhere);
    Files.createSymbolicLink(dir("linked"), elsewhere);
    assertThatThrownBy(() -> store().load("linked"))
        .hasMessageContaining("is a symbolic link")
        .extracting(SnapshotRollbackTest::code)
        .isEqualTo("TAMPERED");
    assertThat(store().list()).isEmpty();
    assertThat(store().remove("linked")).as("the link can be removed").isTrue();
    assertThat(elsewhere.resolve("manifest.json")).as("not what it pointed at").exists();
  }

  @Test
  void theIndexLivesBesideTheKeyOutsideTheStoreAndCountsEverySave() throws Exception {
    save("a", "1", false);
    save("b", "2", false);
    save("a", "3", true);
    SnapshotIndex.State s = store().index().read();
    assertThat(s).isNotNull();
    assertThat(s.counter()).isEqualTo(3);
    assertThat(s.entries().get("a").generation()).isEqualTo(3);
    assertThat(s.entries().get("b").generation()).isEqualTo(2);
    assertThat(store().index().file()).isEqualTo(home.resolve("snapshot.index"));
  }

  @Test
  void anIndexEditedWithoutTheKeyIsRefusedAndNothingLoads() throws Exception {
    save("a", "1", false);
    Path index = home.resolve("snapshot.index");
    ObjectNode signed = (ObjectNode) Json.MAPPER.readTree(Files.readAllBytes(index));
    ((ObjectNode) signed.path("index").path("entries").path("a")).put("generation", 7);
    Files.write(index, Json.MAPPER.writeValueAsBytes(signed));
    assertThatThrownBy(() -> store().load("a"))
        .hasMessageContaining("snapshot index")
        .hasMessageContaining("signature does not match")
        .extracting(SnapshotRollbackTest::code)
        .isEqualTo("TAMPERED");
  }

  @Test
  void snapshotsSavedBeforeTheIndexExistedAreAdoptedOnceAndOlderCopiesStillRefused()
      throws Exception {
    save("legacy", "v1", false);
    Path v1 = home.resolve("v1");
    copyTree(dir("legacy"), v1);
    save("legacy", "v2", true);
    // As before the index: no index file, manifests without a generation (signed by the key).
    for (Path d : List.of(dir("legacy"), v1)) {
      Path mf = d.resolve("manifest.json");
      ObjectNode signed = (ObjectNode) Json.MAPPER.readTree(Files.readAllBytes(mf));
      ObjectNode m = (ObjectNode) signed.get("manifest");
      m.remove("generation");
      signed.put("hmac_sha256", store().hmac(Json.MAPPER.writeValueAsBytes(m)));
      Files.write(mf, Json.MAPPER.writeValueAsBytes(signed));
    }
    Files.delete(home.resolve("snapshot.index"));

    assertThat(store().load("legacy").state().workspace()).asString().isEqualTo("v2");
    assertThat(store().index().read().entries()).containsKey("legacy");

    HostFiles.deleteTree(dir("legacy"));
    copyTree(v1, dir("legacy"));
    assertThatThrownBy(() -> store().load("legacy"))
        .extracting(SnapshotRollbackTest::code)
        .isEqualTo("TAMPERED");
  }
}
