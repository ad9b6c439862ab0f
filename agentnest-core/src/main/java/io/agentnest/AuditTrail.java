package io.agentnest;

import java.nio.file.Path;

/**
 * Where a sandbox's audit events go ({@link SandboxConfig.Builder#auditLog}). The audit package's
 * {@code AuditLog} is the one implementation, and the runtime refuses any other (as a file system
 * refuses a path of another provider). The type is the API's so that the configuration can name the
 * log without importing the audit package, which sits above it.
 */
public interface AuditTrail {
  /** The directory the trail is kept in. */
  Path dir();
}
