package io.agentnest.internal.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.spi.support.DiskGuard;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** State held while a fork's copies start: small in memory, the rest on disk, within a reserve. */
class SpillTest {
  @Test
  void smallStaysInMemoryLargeGoesToATempFileThatCloseDeletes(@TempDir Path dir) throws Exception {
    DiskGuard plenty = new DiskGuard(dir, 0, p -> Long.MAX_VALUE / 4, "test", "fix");
    byte[] data = new byte[Spill.IN_MEMORY + 12345];
    new Random(7).nextBytes(data);
    long before = tempFiles();
    Spill s = new Spill(plenty);
    s.write(data, 0, 1000);
    assertThat(tempFiles()).isEqualTo(before);
    s.write(data, 1000, data.length - 1000);
    assertThat(tempFiles()).isEqualTo(before + 1);
    assertThat(s.size()).isEqualTo(data.length);
    try (InputStream in = s.open()) {
      assertThat(in.readAllBytes()).isEqualTo(data);
    }
    s.close();
    assertThat(tempFiles()).isEqualTo(before);
  }

  @Test
  void aSpillThatWouldTouchTheReserveIsRefused(@TempDir Path dir) throws Exception {
    AtomicLong free = new AtomicLong(10L << 30);
    DiskGuard guard = new DiskGuard(dir, 1L << 30, p -> free.get(), "state", "free disk", 0, 0);
    try (Spill s = new Spill(guard)) {
      s.write(new byte[Spill.IN_MEMORY], 0, Spill.IN_MEMORY);
      free.set(1L << 29);
      assertThatThrownBy(() -> s.write(new byte[10], 0, 10))
          .isInstanceOf(DiskGuard.DiskFullException.class)
          .hasMessageContaining("below the reserve of 1.0 GiB")
          .hasMessageContaining("free disk");
    }
  }

  private static long tempFiles() throws Exception {
    try (var s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return s.filter(p -> p.getFileName().toString().startsWith("agentnest-spill-")).count();
    }
  }
}
