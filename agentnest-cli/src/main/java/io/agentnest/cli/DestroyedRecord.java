package io.agentnest.cli;

import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import java.util.Map;
import java.util.Set;

/**
 * The {@code sandbox.destroyed} record of a sandbox the CLI removed through the backend ({@code
 * rm}, {@code prune}), where no sandbox handle (which writes its own) was involved: every end of a
 * sandbox is in the trail, whoever ended it.
 */
final class DestroyedRecord {
  /** The resource kinds that are sandboxes (others are their networks, volumes, directories). */
  static final Set<String> SANDBOX_KINDS = Set.of("container", "microvm", "sandbox");

  private DestroyedRecord() {}

  static void write(String sandboxId, boolean expired, String reason) {
    AuditLog.shared()
        .record(
            AuditEvent.SANDBOX_DESTROYED, sandboxId, Map.of("expired", expired, "reason", reason));
  }
}
