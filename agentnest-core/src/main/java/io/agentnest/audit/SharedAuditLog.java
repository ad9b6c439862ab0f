package io.agentnest.audit;

import io.agentnest.AgentNestException;
import io.agentnest.spi.support.ExitHooks;
import org.jspecify.annotations.Nullable;

/** The holder behind {@link AuditLog#shared()}. */
final class SharedAuditLog {
  private static volatile @Nullable AuditLog shared;

  private SharedAuditLog() {}

  static AuditLog get() {
    AuditLog a = shared;
    if (a == null) {
      synchronized (SharedAuditLog.class) {
        a = shared;
        if (a == null) {
          try {
            a = AuditLog.openDefault();
          } catch (RuntimeException e) {
            throw new AgentNestException(
                "cannot open the audit log under "
                    + AuditLog.defaultDir()
                    + " ("
                    + e.getMessage()
                    + "): make it writable, or point AGENTNEST_HOME elsewhere",
                e);
          }
          AuditLog opened = a;
          // After the sandboxes this process still owns are destroyed and audited.
          ExitHooks.add(ExitHooks.AUDIT, opened::close);
          shared = a;
        }
      }
    }
    return a;
  }
}
