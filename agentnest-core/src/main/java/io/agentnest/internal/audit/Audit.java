package io.agentnest.internal.audit;

import io.agentnest.AuditTrail;
import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditLog;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How sandboxes record: in the process-wide default audit log ({@link AuditLog#shared()}); a
 * sandbox that cannot be audited is not created (fail closed), and a record after the fact never
 * fails the operation it describes.
 */
public final class Audit {
  private static final Logger LOG = LoggerFactory.getLogger(Audit.class);

  private Audit() {}

  /** {@link AuditLog#shared()}. */
  public static AuditLog shared() {
    return AuditLog.shared();
  }

  /**
   * The log a sandbox of {@code config} records in: its own, or the shared one.
   *
   * @throws ConfigException for a trail that is not an {@link AuditLog}
   */
  public static AuditLog of(SandboxConfig config) {
    AuditTrail t = config.auditLog();
    if (t == null) {
      return shared();
    }
    if (t instanceof AuditLog log) {
      return log;
    }
    throw new ConfigException(
        "SandboxConfig.auditLog takes an io.agentnest.audit.AuditLog (AuditLog.open(dir)), not a "
            + t.getClass().getName());
  }

  /** Records without ever failing the operation being audited after it happened. */
  public static void record(
      AuditLog log, String type, @Nullable String sandboxId, Map<String, ?> data) {
    try {
      log.record(type, sandboxId, data);
    } catch (RuntimeException e) {
      // At most one warning every 10 s: a full disk refuses every record, and a warning per
      // record would go to the same disk.
      long now = System.nanoTime();
      long last = lastWarning.get();
      if (now - last >= WARN_EVERY_NANOS && lastWarning.compareAndSet(last, now)) {
        LOG.warn(
            "audit record {} for {} failed (further failures for 10 s are not logged): {}",
            type,
            sandboxId,
            e.toString());
      } else {
        LOG.debug("audit record {} for {} failed: {}", type, sandboxId, e.toString());
      }
    }
  }

  private static final long WARN_EVERY_NANOS = 10_000_000_000L;
  private static final AtomicLong lastWarning =
      new AtomicLong(System.nanoTime() - WARN_EVERY_NANOS);
}
