package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Artifact;
import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Artifacts out of and files into a real sandbox, and the refusals on both ways. */
@ExtendWith(DockerEngineRequired.class)
class ArtifactsIT {
  static Sandbox sb;
  @TempDir Path host;

  @BeforeAll
  static void start() {
    sb = Sandbox.create();
  }

  @AfterAll
  static void stop() {
    if (sb != null) {
      sb.destroy();
    }
  }

  static String sha256(Path p) throws Exception {
    return HexFormat.of()
        .formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
  }

  @Test
  void producedFilesAreListedAndExportedWithHostComputedHashes() throws Exception {
    sb.runCode(
        "import os\n"
            + "os.makedirs('output/plots/deep', exist_ok=True)\n"
            + "for i in range(3):\n"
            + "    open(f'output/plots/p{i}.png', 'wb').write(os.urandom(1000 + i))\n"
            + "open('output/plots/deep/q.png', 'wb').write(b'png')\n"
            + "open('output/notes.txt', 'w').write('not a png')\n");
    List<Artifact> listed = sb.artifacts("output/**.png");
    assertThat(listed)
        .extracting(Artifact::path)
        .containsExactlyInAnyOrder(
            "output/plots/p0.png",
            "output/plots/p1.png",
            "output/plots/p2.png",
            "output/plots/deep/q.png");
    assertThat(listed).allMatch(a -> a.hostPath() == null);

    List<Artifact> saved = sb.exportArtifacts("output/**.png", host.resolve("results"));
    assertThat(saved).hasSize(4);
    for (Artifact a : saved) {
      assertThat(a.hostPath()).exists();
      assertThat(Files.size(a.hostPath())).isEqualTo(a.size());
      assertThat(sha256(a.hostPath())).isEqualTo(a.sha256());
    }
    String inside =
        sb.exec("sha256sum /workspace/output/plots/p1.png | cut -d' ' -f1").stdout().strip();
    Artifact p1 = saved.stream().filter(a -> a.path().endsWith("p1.png")).findFirst().orElseThrow();
    assertThat(p1.sha256()).isEqualTo(inside);
    assertThat(p1.size()).isEqualTo(1001);
    assertThat(sb.artifacts("nothing/*.bin")).isEmpty();
    try (Stream<Path> s = Files.list(host.resolve("results"))) {
      assertThat(s.map(p -> p.getFileName().toString())).containsExactly("output");
    }
  }

  @Test
  void symlinksFifosAndHardLinksInTheWorkspaceAreNeverFollowed() throws Exception {
    sb.exec(
        "mkdir -p /workspace/hostile && cd /workspace/hostile && ln -sf /etc/passwd link.txt"
            + " && mkfifo pipe.txt && echo ok > real.txt");
    assertThatThrownBy(() -> sb.exportArtifacts("hostile/link.txt", host))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("symlink");
    assertThatThrownBy(() -> sb.exportArtifacts("hostile/pipe.txt", host))
        .hasMessageContaining("not a regular file");
    assertThatThrownBy(() -> sb.exportArtifacts("hostile/*.txt", host))
        .isInstanceOf(FileOperationException.class);
    try (Stream<Path> s = Files.list(host)) {
      assertThat(s).as("a refused export leaves nothing behind").isEmpty();
    }
    assertThat(sb.exportArtifacts("hostile/real.txt", host)).hasSize(1);
    assertThat(Files.readString(host.resolve("hostile/real.txt"))).isEqualTo("ok\n");
    assertThatThrownBy(() -> sb.artifacts("../etc/*")).hasMessageContaining("'..'");
    assertThatThrownBy(() -> sb.artifacts("/etc/passwd")).hasMessageContaining("relative");
    sb.exec("rm -rf /workspace/hostile");
  }

  @Test
  void filesAndDirectoriesAreUploaded() throws Exception {
    Path one = Files.writeString(host.resolve("one.csv"), "a,b\n1,2\n");
    List<Artifact> up = sb.upload(one, "input/data.csv");
    assertThat(up).singleElement().extracting(Artifact::path).isEqualTo("input/data.csv");
    assertThat(sb.files().readString("input/data.csv")).isEqualTo("a,b\n1,2\n");

    Path tree = Files.createDirectories(host.resolve("tree/sub"));
    Files.writeString(tree.resolve("x.txt"), "x");
    Files.write(host.resolve("tree/big.bin"), new byte[3 << 20]);
    Files.createSymbolicLink(host.resolve("tree/inside"), Path.of("sub/x.txt"));
    List<Artifact> dir = sb.upload(host.resolve("tree"), "uploaded");
    assertThat(dir)
        .extracting(Artifact::path)
        .containsExactlyInAnyOrder("uploaded/sub/x.txt", "uploaded/big.bin");
    assertThat(
            sb.exec("cat /workspace/uploaded/inside; stat -c %s /workspace/uploaded/big.bin")
                .stdout())
        .isEqualTo("x" + (3 << 20) + "\n");
    assertThat(
            dir.stream()
                .filter(a -> a.path().endsWith("big.bin"))
                .findFirst()
                .orElseThrow()
                .sha256())
        .isEqualTo(sha256(host.resolve("tree/big.bin")));
  }

  @Test
  void hostileUploadsAreRefusedBeforeAnythingIsSent() throws Exception {
    Path tree = Files.createDirectories(host.resolve("bad"));
    Files.createSymbolicLink(tree.resolve("out"), Path.of("/etc"));
    assertThatThrownBy(() -> sb.upload(tree, "bad"))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("pointing outside");
    assertThatThrownBy(() -> sb.upload(host, "../escape")).hasMessageContaining("'..'");
    assertThatThrownBy(() -> sb.upload(host, "/etc/x")).hasMessageContaining("absolute");
    assertThatThrownBy(() -> sb.upload(host.resolve("missing"), "m"))
        .hasMessageContaining("no such host file");

    Path slip = host.resolve("slip.tar");
    writeTar(slip, "../../tmp/slipped", TarArchiveEntry.LF_NORMAL, null);
    assertThatThrownBy(() -> sb.uploadArchive(slip, "arch")).hasMessageContaining("'..'");
    writeTar(slip, "/tmp/abs", TarArchiveEntry.LF_NORMAL, null);
    assertThatThrownBy(() -> sb.uploadArchive(slip, "arch")).hasMessageContaining("absolute");
    writeTar(slip, "hl", TarArchiveEntry.LF_LINK, "/etc/passwd");
    assertThatThrownBy(() -> sb.uploadArchive(slip, "arch")).hasMessageContaining("hard link");
    writeTar(slip, "dev", TarArchiveEntry.LF_CHR, null);
    assertThatThrownBy(() -> sb.uploadArchive(slip, "arch")).hasMessageContaining("special");
    writeTar(slip, "ln", TarArchiveEntry.LF_SYMLINK, "../../../etc");
    assertThatThrownBy(() -> sb.uploadArchive(slip, "arch"))
        .hasMessageContaining("pointing outside");
    assertThat(sb.exec("ls /tmp/slipped /tmp/abs /workspace/arch 2>&1 || true").stdout())
        .doesNotContain("slipped\n")
        .contains("No such file");

    writeTar(slip, "fine/ok.txt", TarArchiveEntry.LF_NORMAL, null);
    assertThat(sb.uploadArchive(slip, "arch"))
        .extracting(Artifact::path)
        .containsExactly("arch/fine/ok.txt");
    assertThat(sb.files().readString("arch/fine/ok.txt")).isEqualTo("data");
  }

  static void writeTar(Path p, String name, byte type, String link) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(b)) {
      TarArchiveEntry e = new TarArchiveEntry(name, type, true);
      if (link != null) {
        e.setLinkName(link);
      }
      byte[] data = "data".getBytes(StandardCharsets.UTF_8);
      if (type == TarArchiveEntry.LF_NORMAL) {
        e.setSize(data.length);
      }
      t.putArchiveEntry(e);
      if (type == TarArchiveEntry.LF_NORMAL) {
        t.write(data);
      }
      t.closeArchiveEntry();
    }
    try (OutputStream o = Files.newOutputStream(p)) {
      o.write(b.toByteArray());
    }
  }
}
