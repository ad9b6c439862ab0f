package io.agentnest.cli;

import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import java.util.List;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Reattaching to a sandbox made earlier, by id or unique prefix. When there is none, the audit
 * trail may know why: a sandbox that was destroyed or expired is named as such, with the way to a
 * new one, rather than as an id that never existed.
 */
final class Attach {
  private Attach() {}

  /** {@link Sandbox#connect(String)}: for commands that run no code (no approvals needed). */
  static Sandbox connect(String id) {
    return explained(id, () -> Sandbox.connect(id));
  }

  static Sandbox connect(String id, ApprovalPolicy approvals, ApprovalHandler handler) {
    return explained(id, () -> Sandbox.connect(id, approvals, handler));
  }

  private static Sandbox explained(String id, Supplier<Sandbox> attach) {
    try {
      return attach.get();
    } catch (SandboxNotFoundException e) {
      String ended = endOf(id);
      if (ended == null) {
        throw e;
      }
      SandboxNotFoundException why = new SandboxNotFoundException(ended);
      why.addSuppressed(e);
      throw why;
    }
  }

  /** What the audit trail says ended sandbox {@code id}, as a message with the fix; else null. */
  static @Nullable String endOf(String id) {
    if (!id.matches("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")) {
      return null;
    }
    List<AuditEvent> end;
    try {
      end =
          AuditLog.shared()
              .query(
                  AuditQuery.builder()
                      .sandbox(id)
                      .type(AuditEvent.SANDBOX_DESTROYED, AuditEvent.SANDBOX_EXPIRED)
                      .newestFirst()
                      .limit(1)
                      .build());
    } catch (RuntimeException unreadable) {
      return null; // the engine's own message stands
    }
    if (end.isEmpty()) {
      return null;
    }
    AuditEvent e = end.get(0);
    String full = e.sandboxId() == null ? id : e.sandboxId();
    Object reason = e.data().get("reason");
    String how =
        e.type().equals(AuditEvent.SANDBOX_EXPIRED) || Boolean.TRUE.equals(e.data().get("expired"))
            ? "expired (its TTL ran out; 'agentnest extend ID 1h' keeps a live one longer)"
            : "was destroyed" + (reason == null ? "" : " (" + reason + ")");
    return "sandbox "
        + short12(full)
        + " "
        + how
        + " at "
        + e.time()
        + ": it cannot run anything any more. 'agentnest create' makes a new one, 'agentnest ls'"
        + " lists the running ones, 'agentnest logs "
        + short12(full)
        + "' shows what it ran";
  }

  static String short12(String id) {
    return id.substring(0, Math.min(12, id.length()));
  }
}
