package io.agentnest.internal.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.internal.support.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ManifestTest {
  @TempDir Path home;

  private SnapshotKey key() {
    return SnapshotKey.besideStore(home.resolve("snapshots"));
  }

  private static ObjectNode manifest(String name) {
    ObjectNode m = Manifest.build(name, SandboxConfig.defaults(), "sha256:abc", List.of(), null);
    m.put("generation", 1);
    return m;
  }

  private Path written(Manifest.Signed signed) throws Exception {
    Path mf = home.resolve("manifest.json");
    Files.write(mf, signed.bytes());
    return mf;
  }

  @Test
  void aSignedManifestReadsBackAsItWasSigned() throws Exception {
    ObjectNode m = manifest("s1");
    Manifest.Signed signed = Manifest.sign(m, key());

    Manifest.Verified v = Manifest.read(written(signed), "s1", key());

    assertThat(Json.MAPPER.writeValueAsString(v.manifest()))
        .isEqualTo(Json.MAPPER.writeValueAsString(m));
    assertThat(v.signature()).isEqualTo(signed.signature()).hasSize(64);
  }

  @Test
  void aManifestChangedAfterSigningIsRefusedAsTampered() throws Exception {
    Manifest.Signed signed = Manifest.sign(manifest("s1"), key());
    ObjectNode changed = (ObjectNode) Json.MAPPER.readTree(signed.bytes());
    ((ObjectNode) changed.path("manifest")).put("image", "evil/image:latest");
    Path mf = home.resolve("manifest.json");
    Files.write(mf, Json.MAPPER.writeValueAsBytes(changed));

    assertThatThrownBy(() -> Manifest.read(mf, "s1", key()))
        .isInstanceOf(SnapshotException.class)
        .hasMessageContaining("was modified after it was saved");
  }

  @Test
  void aManifestSignedUnderAnotherInstallationsKeyIsRefused() throws Exception {
    SnapshotKey other = SnapshotKey.besideStore(home.resolve("elsewhere/snapshots"));
    Path mf = written(Manifest.sign(manifest("s1"), other));

    assertThatThrownBy(() -> Manifest.read(mf, "s1", key()))
        .hasMessageContaining("signature does not match this installation's key");
  }

  @Test
  void aManifestWithoutASignatureIsRefused() throws Exception {
    ObjectNode unsigned = Json.object();
    unsigned.set("manifest", manifest("s1"));
    Path mf = home.resolve("manifest.json");
    Files.write(mf, Json.MAPPER.writeValueAsBytes(unsigned));

    assertThatThrownBy(() -> Manifest.read(mf, "s1", key()))
        .hasMessageContaining("without a signature");
  }

  @Test
  void aManifestSignedForAnotherNameIsRefused() throws Exception {
    Path mf = written(Manifest.sign(manifest("other"), key()));

    assertThatThrownBy(() -> Manifest.read(mf, "s1", key())).hasMessageContaining("another name");
  }

  @Test
  void aSignedManifestListingAPartOutsideTheSnapshotIsStillRefused() throws Exception {
    ObjectNode m = manifest("s1");
    m.withArray("parts")
        .addObject()
        .put("file", "../../snapshot.key")
        .put("kind", "workspace")
        .put("size", 1)
        .put("sha256", "00");
    Path mf = written(Manifest.sign(m, key()));

    assertThatThrownBy(() -> Manifest.read(mf, "s1", key()))
        .hasMessageContaining("bad kind or file name");
  }

  @Test
  void anOversizedManifestIsRefusedBeforeItIsParsed() throws Exception {
    Path mf = home.resolve("manifest.json");
    Files.write(mf, new byte[(int) Manifest.MAX_MANIFEST_BYTES + 1]);

    assertThatThrownBy(() -> Manifest.read(mf, "s1", key()))
        .hasMessageContaining("larger than " + Manifest.MAX_MANIFEST_BYTES);
  }

  @Test
  void aKeyOthersCanReadIsRefusedWithTheFix() throws Exception {
    SnapshotKey k = key();
    k.hmac(new byte[] {1});
    Files.setPosixFilePermissions(k.file(), PosixFilePermissions.fromString("rw-r--r--"));

    assertThatThrownBy(() -> k.hmac(new byte[] {1}))
        .hasMessageContaining("can be read or written by other users")
        .hasMessageContaining("chmod 600");
  }

  @Test
  void theKeyIsMadeOnceWithMode0600AndSignsTheSameBytesTheSameWay() throws Exception {
    String a = key().hmac(new byte[] {1, 2, 3});
    String b = key().hmac(new byte[] {1, 2, 3});

    assertThat(a).isEqualTo(b);
    assertThat(key().hmac(new byte[] {1, 2, 4})).isNotEqualTo(a);
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key().file())))
        .isEqualTo("rw-------");
  }

  @Test
  void infoReportsTheSavedConfigAndSessions() {
    JsonNode m = manifest("s1");

    assertThat(Manifest.info(m).name()).isEqualTo("s1");
    assertThat(Manifest.info(m).config().image()).isEqualTo(SandboxConfig.defaults().image());
  }
}
