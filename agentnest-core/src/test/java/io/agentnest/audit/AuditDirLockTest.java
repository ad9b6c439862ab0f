package io.agentnest.audit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AuditDirLockTest {
  @TempDir Path dir;

  @Test
  void logsOfOneDirectoryInOneJvmShareOneLockUntilTheLastLetsGo() throws IOException {
    Path lockFile = dir.toRealPath().resolve(AuditLog.LOCK_FILE);
    AuditDirLock first;
    try (AuditLog log = AuditLog.open(dir)) {
      first = AuditDirLock.acquire(lockFile);
      // A file lock is per JVM: a second lock object would let two appenders in at once.
      assertThat(AuditDirLock.acquire(lockFile)).isSameAs(first);
      first.releaseRef(log);
      first.releaseRef(log);
    }
    AuditDirLock next = AuditDirLock.acquire(lockFile);
    assertThat(next).isNotSameAs(first);
    try (AuditLog log = AuditLog.open(dir)) {
      next.releaseRef(log);
    }
  }
}
