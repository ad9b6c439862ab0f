package io.agentnest.spi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostFilesTest {
  @TempDir Path dir;

  private Path sparseDisk() throws IOException {
    Path disk = dir.resolve("disk.img");
    try (RandomAccessFile f = new RandomAccessFile(disk.toFile(), "rw")) {
      f.setLength(64L << 20);
      f.seek(5L << 20);
      f.write("middle".getBytes(StandardCharsets.US_ASCII));
    }
    return disk;
  }

  @Test
  void aSparseCopyHasTheSameBytesAndKeepsTheHoles() throws IOException {
    Path disk = sparseDisk();
    Path copy = dir.resolve("copy.img");
    assertThat(HostFiles.copySparse(disk, copy, Long.MAX_VALUE)).isEqualTo(64L << 20);
    assertThat(Files.size(copy)).isEqualTo(64L << 20);
    assertThat(Files.mismatch(disk, copy)).isEqualTo(-1);
    // 64 MiB apparent, one 64 KiB block written (plus the last byte's block)
    assertThat(allocatedBytes(copy)).isLessThan(1L << 20);
  }

  /** Blocks the file system gave the file (stat's %b, 512-byte units). */
  private static long allocatedBytes(Path p) throws IOException {
    Process stat = new ProcessBuilder("stat", "-c", "%b", p.toString()).start();
    String out = new String(stat.getInputStream().readNBytes(64), StandardCharsets.US_ASCII);
    try {
      assertThat(stat.waitFor(10, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
    return Long.parseLong(out.strip()) * 512;
  }

  @Test
  void aCopyStopsAtItsBound() throws IOException {
    Path copy = dir.resolve("cut.img");
    assertThat(HostFiles.copySparse(sparseDisk(), copy, 1000)).isEqualTo(1000);
    assertThat(Files.size(copy)).isEqualTo(1000);
  }

  @Test
  void itNeverOverwritesAFile() throws IOException {
    Path disk = sparseDisk();
    Path there = Files.writeString(dir.resolve("there"), "x");
    assertThatThrownBy(() -> HostFiles.copySparse(disk, there, 10))
        .isInstanceOf(FileAlreadyExistsException.class);
  }
}
