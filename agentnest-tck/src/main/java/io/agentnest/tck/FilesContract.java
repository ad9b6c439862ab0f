package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Artifact;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The path-safe file API and transfers between host and sandbox. */
public interface FilesContract extends BackendTarget {

  @Test
  default void writeReadStatListAndDeleteRoundTrip(@Shared Sandbox sb) {
    FileInfo written = sb.files().write("files-contract/a.txt", "alpha");
    assertThat(written.size()).isEqualTo(5);
    assertThat(sb.files().readString("files-contract/a.txt")).isEqualTo("alpha");
    assertThat(sb.files().stat("files-contract/a.txt").type()).isEqualTo(FileInfo.Type.FILE);
    assertThat(sb.files().list("files-contract"))
        .extracting(FileInfo::path)
        .anySatisfy(p -> assertThat(p).endsWith("a.txt"));
    assertThat(sb.exec("cat /workspace/files-contract/a.txt").stdout()).isEqualTo("alpha");
    sb.files().delete("files-contract/a.txt");
    assertThat(sb.files().exists("files-contract/a.txt")).isFalse();
  }

  @Test
  default void pathsThatLeaveTheWorkspaceAreRefused(@Shared Sandbox sb) {
    for (String hostile : List.of("../etc/passwd", "a/../../etc/passwd", "/etc/passwd")) {
      assertThatThrownBy(() -> sb.files().read(hostile))
          .as(hostile)
          .isInstanceOf(FileOperationException.class);
    }
    sb.exec("ln -sf /etc/passwd /workspace/files-contract-link");
    assertThatThrownBy(() -> sb.files().read("files-contract-link"))
        .isInstanceOf(FileOperationException.class);
  }

  @Test
  default void aLargeBinaryFileKeepsEveryByte(@Shared Sandbox sb) {
    byte[] data = new byte[5 << 20];
    new Random(42).nextBytes(data);
    sb.files().write("files-contract/big.bin", data);
    assertThat(sb.files().read("files-contract/big.bin")).isEqualTo(data);
    assertThat(sb.exec("sha256sum /workspace/files-contract/big.bin | cut -d' ' -f1").stdout())
        .isEqualTo(sha256(data) + "\n");
  }

  @Test
  default void streamedWritesAndReadsKeepEveryByteAndRefuseWhatPlainOnesRefuse(@Shared Sandbox sb) {
    byte[] data = new byte[(12 << 20) + 12345];
    new Random(7).nextBytes(data);
    FileInfo written =
        sb.files().write("files-contract/streamed.bin", new ByteArrayInputStream(data));
    assertThat(written.size()).isEqualTo(data.length);
    ByteArrayOutputStream back = new ByteArrayOutputStream();
    assertThat(sb.files().read("files-contract/streamed.bin", back)).isEqualTo(data.length);
    assertThat(back.toByteArray()).isEqualTo(data);
    assertThat(sb.exec("sha256sum /workspace/files-contract/streamed.bin | cut -d' ' -f1").stdout())
        .isEqualTo(sha256(data) + "\n");
    sb.exec("ln -sf /etc/passwd /workspace/files-contract-streamed-link");
    assertThatThrownBy(
            () -> sb.files().read("files-contract-streamed-link", new ByteArrayOutputStream()))
        .isInstanceOf(FileOperationException.class);
    assertThatThrownBy(
            () -> sb.files().write("../escaped.bin", new ByteArrayInputStream(new byte[1])))
        .isInstanceOf(FileOperationException.class);
    // A source that fails midway is the caller's error, said as such.
    InputStream failing =
        new InputStream() {
          int left = 3 << 20;

          @Override
          public int read() throws IOException {
            if (left-- <= 0) {
              throw new IOException("the source broke");
            }
            return 'x';
          }
        };
    assertThatThrownBy(() -> sb.files().write("files-contract/broken.bin", failing))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("the source broke");
    // The sandbox is still usable after it.
    assertThat(sb.exec("echo ok").stdout()).isEqualTo("ok\n");
  }

  @Test
  default void uploadsAndExportsCarryHostComputedChecksums(@Shared Sandbox sb, @TempDir Path host)
      throws IOException {
    Path in = host.resolve("in.csv");
    Files.writeString(in, "a,b\n1,2\n");
    List<Artifact> up = sb.upload(in, "files-contract/up/in.csv");
    assertThat(up).singleElement().satisfies(a -> assertThat(a.size()).isEqualTo(8));
    sb.exec("cp /workspace/files-contract/up/in.csv /workspace/files-contract/up/out.csv");
    List<Artifact> out = sb.exportArtifacts("files-contract/up/out.csv", host.resolve("export"));
    assertThat(out)
        .singleElement()
        .satisfies(
            a -> {
              assertThat(a.sha256()).isEqualTo(sha256(Files.readAllBytes(in)));
              assertThat(a.hostPath()).isNotNull();
              assertThat(Files.readString(a.hostPath())).isEqualTo("a,b\n1,2\n");
            });
  }

  private static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
