package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;
import java.time.Instant;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Audit records for the shipping tests (hashes are placeholders: nothing here checks a chain). */
final class Events {
  private Events() {}

  static AuditEvent event(
      long seq, String type, @Nullable String sandbox, Map<String, Object> data) {
    return new AuditEvent(
        seq,
        Instant.parse("2026-12-04T21:00:00.123456Z").plusMillis(seq),
        type,
        sandbox,
        "host:1:2",
        data,
        "0".repeat(64),
        String.format("%064x", seq),
        AuditEvent.SCHEMA);
  }

  static AuditEvent exec(long seq) {
    return event(seq, AuditEvent.EXEC_STARTED, "sb" + (seq % 3), Map.of("command", "ls " + seq));
  }
}
