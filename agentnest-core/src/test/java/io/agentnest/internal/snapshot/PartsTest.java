package io.agentnest.internal.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.state.StateDisk;
import io.agentnest.internal.support.Json;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PartsTest {
  @TempDir Path dir;

  private Parts.Staging staging(Map<String, byte[]> secrets) {
    return new Parts.Staging(dir, secrets, StateDisk.guard(dir, p -> 10L << 30));
  }

  private static ObjectNode part(String file, String kind, long size, String sha256) {
    return Json.object()
        .put("file", file)
        .put("kind", kind)
        .put("size", size)
        .put("sha256", sha256);
  }

  @Test
  void aPartWriterKeepsSizeAndSha256OfWhatItWrote() throws Exception {
    byte[] data = "the workspace tar".getBytes(StandardCharsets.UTF_8);
    Parts.Staging w = staging(Map.of());
    Parts.PartWriter p = w.open("workspace.tar", "workspace");
    try (p) {
      p.write(data);
    }

    assertThat(p.size).isEqualTo(data.length);
    assertThat(HexFormat.of().formatHex(p.sha.digest())).isEqualTo(SnapshotKey.sha256(data));
    assertThat(Files.readAllBytes(dir.resolve("workspace.tar"))).isEqualTo(data);
    assertThat(w.parts).containsExactly(p);
  }

  @Test
  void aSecretValueStopsThePartAndNamesTheVariable() throws Exception {
    Parts.Staging w =
        staging(Map.of("API_TOKEN", "tok-0123456789".getBytes(StandardCharsets.UTF_8)));
    Parts.PartWriter p = w.open("tmp.tar", "tmp");
    try (p) {
      p.write("before tok-01".getBytes(StandardCharsets.UTF_8));
      p.write("23456789 after".getBytes(StandardCharsets.UTF_8));
    }

    assertThat(p.secretFound()).isEqualTo("API_TOKEN");
    assertThat(Files.readString(dir.resolve("tmp.tar"))).doesNotContain("tok-0123456789");
  }

  @Test
  void aPartReadBackIsCheckedAgainstTheManifestsSha256() throws Exception {
    Files.writeString(dir.resolve("workspace.tar"), "changed");
    ObjectNode p = part("workspace.tar", "workspace", 7, SnapshotKey.sha256(new byte[7]));

    try (InputStream in = Parts.PartReader.open(dir, p, "s1")) {
      assertThatThrownBy(in::readAllBytes).hasMessageContaining("sha256 does not match");
    }
  }

  @Test
  void aPartOfAnotherSizeThanTheManifestSaysIsRefusedBeforeReading() throws Exception {
    Files.writeString(dir.resolve("workspace.tar"), "grew meanwhile");

    assertThatThrownBy(
            () -> Parts.checkPartFile(dir, part("workspace.tar", "workspace", 4, "00"), "s1"))
        .hasMessageContaining("the manifest says 4");
  }

  @Test
  void aPartThatIsASymbolicLinkIsRefused() throws Exception {
    Path outside = Files.writeString(dir.resolveSibling(dir.getFileName() + "-secret"), "k");
    Files.createSymbolicLink(dir.resolve("tmp.tar"), outside);

    assertThatThrownBy(() -> Parts.checkPartFile(dir, part("tmp.tar", "tmp", 1, "00"), "s1"))
        .hasMessageContaining("not a regular file");
  }

  @Test
  void aPartInMemoryIsReturnedOnlyWhenItsHashMatches() throws Exception {
    byte[] data = {1, 2, 3};
    Files.write(dir.resolve("session-0.bin"), data);

    assertThat(Parts.readPart(dir, part("session-0.bin", "session", 3, SnapshotKey.sha256(data))))
        .isEqualTo(data);
    assertThatThrownBy(
            () ->
                Parts.readPart(
                    dir, part("session-0.bin", "session", 3, SnapshotKey.sha256(new byte[3]))))
        .hasMessageContaining("sha256 does not match");
  }
}
