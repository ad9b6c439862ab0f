package io.agentnest.internal.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AuditTrail;
import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditLog;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AuditOfConfigTest {
  @Test
  void aSandboxRecordsInTheLogItsConfigNamesOrElseTheSharedOne(@TempDir Path dir) {
    try (AuditLog own = AuditLog.open(dir)) {
      assertThat(Audit.of(SandboxConfig.builder().auditLog(own).build())).isSameAs(own);
    }
    assertThat(Audit.of(SandboxConfig.defaults())).isSameAs(AuditLog.shared());
  }

  @Test
  void aTrailThatIsNoAuditLogIsRefusedNamingWhatToPass(@TempDir Path dir) {
    AuditTrail foreign = () -> dir;
    SandboxConfig config = SandboxConfig.builder().auditLog(foreign).build();
    assertThatThrownBy(() -> Audit.of(config))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("io.agentnest.audit.AuditLog")
        .hasMessageContaining("AuditLog.open(dir)");
  }
}
