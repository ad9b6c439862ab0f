package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Which tenant a sandbox belongs to, learned from its {@code sandbox.created} / {@code
 * sandbox.acquired} record (field {@code tenant}), so that each of its later records can carry the
 * tenant to the collector. Bounded: the least recently seen sandboxes are forgotten. Used on the
 * audit writer's thread only.
 */
final class TenantMemory {
  private final Map<String, String> bySandbox;

  TenantMemory(int max) {
    this.bySandbox =
        new LinkedHashMap<>(64, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > max;
          }
        };
  }

  @Nullable String tenantOf(AuditEvent e) {
    String sandbox = e.sandboxId();
    Object t = e.data().get("tenant");
    String tenant = t instanceof String s && !s.isEmpty() ? s : null;
    if (sandbox == null) {
      return tenant;
    }
    if (tenant != null) {
      bySandbox.put(sandbox, tenant);
    } else {
      tenant = bySandbox.get(sandbox);
    }
    if (AuditEvent.SANDBOX_DESTROYED.equals(e.type())) {
      bySandbox.remove(sandbox);
    }
    return tenant;
  }
}
