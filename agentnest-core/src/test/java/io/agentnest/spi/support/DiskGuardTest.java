package io.agentnest.spi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskGuardTest {
  @TempDir Path dir;

  @Test
  void aDirectoryNotMadeYetIsMeasuredOnTheFilesystemItWillBeMadeOn() throws Exception {
    // A fresh AGENTNEST_HOME has no audit directory before its first sandbox, and the room for
    // audit records is checked before anything is created.
    Path notYet = dir.resolve("home/audit");
    assertThat(Files.exists(notYet)).isFalse();
    assertThat(DiskGuard.FILESYSTEM.usableBytes(notYet)).isPositive();
    DiskGuard guard =
        new DiskGuard(notYet, 0, DiskGuard.FILESYSTEM, "audit records", "free disk space");
    assertThatNoException().isThrownBy(() -> guard.beforeWrite(1));
  }
}
