package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import io.agentnest.internal.DefaultSandbox;
import io.agentnest.internal.files.SandboxArchives;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** tar streams between sandboxes, and the agent's refusal of hostile archives. */
@ExtendWith(DockerEngineRequired.class)
class ArchivesIT {
  static Sandbox a;
  static Sandbox b;

  @BeforeAll
  static void start() {
    a = Sandbox.create();
    b = Sandbox.create();
  }

  @AfterAll
  static void stop() {
    for (Sandbox s : new Sandbox[] {a, b}) {
      if (s != null) {
        s.destroy();
      }
    }
  }

  static SandboxArchives archives(Sandbox s) {
    return ((DefaultSandbox) s).context().archives();
  }

  @Test
  void workspaceTreeCopiesWithDirectoriesSymlinksAndModes() throws Exception {
    a.exec(
        "mkdir -p /workspace/tree/sub && echo hello > /workspace/tree/sub/f.txt"
            + " && chmod 750 /workspace/tree/sub/f.txt && ln -s sub/f.txt /workspace/tree/link"
            + " && head -c 3000000 /dev/urandom > /workspace/tree/big.bin");
    ByteArrayOutputStream tar = new ByteArrayOutputStream();
    SandboxArchives.Summary out =
        archives(a).tarOut("/workspace", List.of("tree"), false, 1L << 30, tar);
    assertThat(out.entries()).isEqualTo(5);
    SandboxArchives.Summary in =
        archives(b)
            .tarIn("/workspace", "", new ByteArrayInputStream(tar.toByteArray()), false, 1L << 30);
    assertThat(in.entries()).isEqualTo(5);
    assertThat(b.exec("cat /workspace/tree/link; stat -c %a /workspace/tree/sub/f.txt").stdout())
        .isEqualTo("hello\n750\n");
    assertThat(b.exec("sha256sum /workspace/tree/big.bin | cut -c1-64").stdout())
        .isEqualTo(a.exec("sha256sum /workspace/tree/big.bin | cut -c1-64").stdout());
  }

  static byte[] tar(TarArchiveEntry... entries) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(bytes)) {
      t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      for (TarArchiveEntry e : entries) {
        byte[] body = e.isFile() ? "x".getBytes(StandardCharsets.UTF_8) : new byte[0];
        if (e.isFile()) {
          e.setSize(body.length);
        }
        t.putArchiveEntry(e);
        t.write(body);
        t.closeArchiveEntry();
      }
    }
    return bytes.toByteArray();
  }

  static TarArchiveEntry link(String name, String target, byte type) {
    TarArchiveEntry e = new TarArchiveEntry(name, type);
    e.setLinkName(target);
    return e;
  }

  static void refused(byte[] archive, String code, String message) {
    assertThatThrownBy(
            () ->
                archives(b)
                    .tarIn("/workspace", "up", new ByteArrayInputStream(archive), true, 1L << 20))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining(message)
        .extracting(e -> ((FileOperationException) e).code())
        .isEqualTo(code);
  }

  @Test
  void hostileArchivesAreRefusedAndNothingLandsOutside() throws Exception {
    refused(tar(new TarArchiveEntry("../../tmp/slip.txt")), "BAD_ENTRY", "path traversal");
    refused(tar(new TarArchiveEntry("ok/../../slip.txt")), "BAD_ENTRY", "path traversal");
    refused(
        tar(link("evil", "/etc/passwd", TarArchiveEntry.LF_SYMLINK)),
        "BAD_ENTRY",
        "points outside");
    refused(
        tar(link("evil2", "../../etc", TarArchiveEntry.LF_SYMLINK)), "BAD_ENTRY", "points outside");
    refused(tar(link("hard", "/etc/passwd", TarArchiveEntry.LF_LINK)), "BAD_ENTRY", "hardlink");
    refused(tar(new TarArchiveEntry("dev", TarArchiveEntry.LF_CHR)), "BAD_ENTRY", "device");
    refused(
        tar(new TarArchiveEntry("caf\u00e9.txt"), new TarArchiveEntry("cafe\u0301.txt")),
        "BAD_ENTRY",
        "normalisation");
    TarArchiveEntry big = new TarArchiveEntry("big.bin");
    refused(tarOfSize(big, 2 << 20), "TOO_LARGE", "more than");
    // A symlink inside, then a file through it: never written through the link.
    refused(
        tar(link("dir", "/tmp", TarArchiveEntry.LF_SYMLINK), new TarArchiveEntry("dir/x")),
        "BAD_ENTRY",
        "points outside");
    assertThat(b.exec("ls /tmp/slip.txt /workspace/slip.txt 2>&1; echo $?").stdout())
        .contains("No such file");
  }

  static byte[] tarOfSize(TarArchiveEntry e, int size) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(bytes)) {
      e.setSize(size);
      t.putArchiveEntry(e);
      t.write(new byte[size]);
      t.closeArchiveEntry();
    }
    return bytes.toByteArray();
  }
}
