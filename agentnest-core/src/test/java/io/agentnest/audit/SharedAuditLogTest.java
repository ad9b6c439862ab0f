package io.agentnest.audit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SharedAuditLogTest {
  @Test
  void sharedIsOneLogInTheDefaultDirectory() {
    AuditLog first = AuditLog.shared();

    assertThat(AuditLog.shared()).isSameAs(first);
    assertThat(first.dir()).isEqualTo(AuditLog.defaultDir().toAbsolutePath().normalize());
  }

  @Test
  void aFrontEndRecordsItsOwnEventsInIt() {
    AuditEvent e = AuditLog.shared().record("config.loaded", null, Map.of("source", "test"));

    assertThat(e.type()).isEqualTo("config.loaded");
    assertThat(AuditLog.shared().lastSeq()).isGreaterThanOrEqualTo(e.seq());
  }
}
