package io.agentnest.internal.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Artifact;
import io.agentnest.FileOperationException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.StringLength;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host-side checks on archives, with crafted hostile tars. */
class ArtifactTransferTest {
  @TempDir Path dir;

  record E(String name, byte type, String link, int size) {
    static E file(String name, int size) {
      return new E(name, TarArchiveEntry.LF_NORMAL, "", size);
    }
  }

  static byte[] tar(E... entries) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(b, "UTF-8")) {
      t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      t.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
      for (E e : entries) {
        TarArchiveEntry te = new TarArchiveEntry(e.name, e.type, true);
        if (!e.link.isEmpty()) {
          te.setLinkName(e.link);
        }
        if (e.type == TarArchiveEntry.LF_NORMAL) {
          te.setSize(e.size);
        }
        t.putArchiveEntry(te);
        // a name ending in '/' makes the entry a directory, which carries no body whatever its type
        if (e.type == TarArchiveEntry.LF_NORMAL && !te.isDirectory()) {
          t.write(new byte[e.size]);
        }
        t.closeArchiveEntry();
      }
    }
    return b.toByteArray();
  }

  static ArtifactTransfer transfer(long maxBytes, int maxEntries) {
    return new ArtifactTransfer(null, null, maxBytes, maxEntries);
  }

  List<Artifact> export(byte[] tar, long maxBytes, int maxEntries) throws IOException {
    return transfer(maxBytes, maxEntries).extract(new ByteArrayInputStream(tar), null, dir);
  }

  void assertRefused(byte[] tar, String message) {
    assertThatThrownBy(() -> export(tar, 1 << 20, 100))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining(message);
    assertThat(leftovers()).as("a refused export leaves nothing").isEmpty();
  }

  List<Path> leftovers() {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(p -> !p.equals(dir)).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Test
  void regularFilesAreWrittenWithHostComputedHashes() throws IOException {
    List<Artifact> out = export(tar(E.file("out/a.txt", 3), E.file("b.bin", 0)), 1 << 20, 10);
    assertThat(out).extracting(Artifact::path).containsExactly("out/a.txt", "b.bin");
    assertThat(out.get(0).size()).isEqualTo(3);
    // sha256 of three zero bytes
    assertThat(out.get(0).sha256())
        .isEqualTo("709e80c88487a2411e1ee4dfb9f22a861492d20c4765150c0c794abd70f8147c");
    assertThat(Files.readAllBytes(dir.resolve("out/a.txt"))).hasSize(3);
    assertThat(out.get(0).hostPath()).isEqualTo(dir.toRealPath().resolve("out/a.txt"));
  }

  @Test
  void anArchiveMadeTheOrdinaryWayWithItsDotDirectoryIsAccepted() throws IOException {
    // `tar -C dir -cf bundle.tar .` starts with "./" and names files "./a.txt".
    List<Artifact> out =
        export(tar(new E("./", TarArchiveEntry.LF_DIR, "", 0), E.file("./a.txt", 2)), 1 << 20, 10);
    assertThat(out).extracting(Artifact::path).containsExactly("a.txt");
    ArtifactTransfer.EntryRules rules = new ArtifactTransfer.EntryRules(1 << 20, 10, false);
    assertThat(rules.check(new TarArchiveEntry("./", TarArchiveEntry.LF_DIR))).isEmpty();
    // The root as a file is still nothing to write.
    assertThatThrownBy(() -> rules.check(new TarArchiveEntry(".", TarArchiveEntry.LF_NORMAL)))
        .hasMessageContaining("workspace root");
  }

  @Test
  void tarSlipAndAbsoluteNamesAreRefused() throws IOException {
    assertRefused(tar(E.file("../evil", 1)), "'..'");
    assertRefused(tar(E.file("a/../../evil", 1)), "'..'");
    assertRefused(tar(E.file("/etc/passwd", 1)), "absolute");
  }

  @Test
  void linksAndSpecialFilesAreRefused() throws IOException {
    assertRefused(
        tar(new E("ln", TarArchiveEntry.LF_SYMLINK, "/", 0), E.file("ln/etc/x", 1)), "symlink");
    assertRefused(tar(new E("hl", TarArchiveEntry.LF_LINK, "/etc/passwd", 0)), "hard link");
    assertRefused(tar(new E("mem", TarArchiveEntry.LF_CHR, "", 0)), "special file");
    assertRefused(tar(new E("fifo", TarArchiveEntry.LF_FIFO, "", 0)), "special file");
    assertRefused(tar(new E("blk", TarArchiveEntry.LF_BLK, "", 0)), "special file");
  }

  @Test
  void namesThatCollideAfterNormalisationAreRefused() throws IOException {
    String nfc = "caf\u00e9.txt";
    String nfd = "cafe\u0301.txt";
    assertRefused(tar(E.file(nfc, 1), E.file(nfd, 1)), "normalisation");
    assertRefused(tar(E.file("Report.txt", 1), E.file("report.txt", 1)), "normalisation");
    assertRefused(tar(E.file("same", 1), E.file("same", 1)), "collides");
  }

  @Test
  void capsOnSizeAndCountAreEnforced() throws IOException {
    assertThatThrownBy(() -> export(tar(E.file("big", 2048)), 1024, 10))
        .hasMessageContaining("cap of 1024 bytes");
    assertThatThrownBy(() -> export(tar(E.file("a", 1), E.file("b", 1), E.file("c", 1)), 1024, 2))
        .hasMessageContaining("more than 2 entries");
    assertThat(leftovers()).isEmpty();
  }

  @Test
  void unaskedEntriesAreRefused() throws IOException {
    assertThatThrownBy(
            () ->
                transfer(1 << 20, 10)
                    .extract(
                        new ByteArrayInputStream(tar(E.file("asked", 1), E.file("extra", 1))),
                        Set.of("asked"),
                        dir))
        .hasMessageContaining("was not asked for");
    assertThat(leftovers()).isEmpty();
  }

  @Test
  void exportNeverWritesThroughASymlinkInTheHostDirectory() throws IOException {
    Path outside = Files.createDirectories(dir.resolveSibling(dir.getFileName() + "-outside"));
    Files.createSymbolicLink(dir.resolve("out"), outside);
    assertThatThrownBy(() -> export(tar(E.file("out/x", 1)), 1 << 20, 10))
        .hasMessageContaining("symlink");
    assertThat(Files.exists(outside.resolve("x"))).isFalse();
  }

  @Test
  void uploadedArchivesMayHoldSymlinksOnlyInside() {
    ArtifactTransfer.EntryRules rules = new ArtifactTransfer.EntryRules(1 << 20, 10, true);
    TarArchiveEntry in = new TarArchiveEntry("a/ln", TarArchiveEntry.LF_SYMLINK);
    in.setLinkName("../b.txt");
    assertThat(rules.check(in)).isEqualTo("a/ln");
    TarArchiveEntry out = new TarArchiveEntry("a/ln2", TarArchiveEntry.LF_SYMLINK);
    out.setLinkName("../../etc/passwd");
    assertThatThrownBy(() -> rules.check(out)).hasMessageContaining("pointing outside");
    TarArchiveEntry abs = new TarArchiveEntry("ln3", TarArchiveEntry.LF_SYMLINK);
    abs.setLinkName("/etc");
    assertThatThrownBy(() -> rules.check(abs)).hasMessageContaining("pointing outside");
    TarArchiveEntry through = new TarArchiveEntry("a/ln/x");
    assertThatThrownBy(() -> rules.check(through)).hasMessageContaining("through the symlink");
  }

  @Test
  void globsMustStayInTheWorkspace() {
    assertThat(ArtifactTransfer.matcher("output/**.png").matches(Path.of("output/a/b.png")))
        .isTrue();
    assertThatThrownBy(() -> ArtifactTransfer.matcher("/etc/*")).hasMessageContaining("relative");
    assertThatThrownBy(() -> ArtifactTransfer.matcher("../*")).hasMessageContaining("'..'");
    assertThatThrownBy(() -> ArtifactTransfer.matcher("")).hasMessageContaining("relative");
  }

  @Property(tries = 300)
  void noEntryNameEverLandsOutsideTheTarget(@ForAll @StringLength(max = 40) String name)
      throws IOException {
    extractsInsideTheTargetOrRefuses(name);
  }

  @Test
  void entryNamesThatAreDirectoriesStayInsideTheTarget() throws IOException {
    for (String name : List.of("/", "//", "../", "a/../../", "/etc/", "./")) {
      extractsInsideTheTargetOrRefuses(name);
    }
  }

  private void extractsInsideTheTargetOrRefuses(String name) throws IOException {
    Path target = Files.createTempDirectory("agentnest-prop-");
    try {
      byte[] t = tar(E.file(name.isEmpty() ? "x" : name, 1));
      try {
        transfer(1 << 20, 10).extract(new ByteArrayInputStream(t), null, target);
      } catch (FileOperationException | IOException | IllegalArgumentException refused) {
        // refusing is fine; writing outside is not
      }
      Path parent = target.getParent();
      try (Stream<Path> s = Files.list(parent)) {
        assertThat(s.filter(p -> p.getFileName().toString().startsWith(".agentnest-export-")))
            .isEmpty();
      }
      try (Stream<Path> s = Files.walk(target)) {
        assertThat(s.map(p -> p.toAbsolutePath().normalize()))
            .allMatch(p -> p.startsWith(target.toAbsolutePath().normalize()));
      }
    } finally {
      try (Stream<Path> s = Files.walk(target)) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
