package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.AuditEvent;

/** The syslog severity (RFC 5424 §6.2.1) of a record, also mapped to OpenTelemetry's. */
enum SyslogSeverity {
  WARNING(4),
  NOTICE(5),
  INFO(6);

  final int code;

  SyslogSeverity(int code) {
    this.code = code;
  }

  /**
   * Warning: something was refused or leaked (policy violations, a credential placeholder sent to
   * the wrong host, a denied network attempt). Notice: a person's decision or a bound reached
   * (approvals, limits, redactions, credentials used). Info: the rest of the trail.
   */
  static SyslogSeverity of(AuditEvent e) {
    return switch (e.type()) {
      case AuditEvent.POLICY_VIOLATION,
          AuditEvent.NETWORK_PLACEHOLDER_LEAK,
          AuditEvent.NETWORK_REQUEST_DENIED ->
          WARNING;
      case AuditEvent.NETWORK_ATTEMPT -> "deny".equals(e.decision()) ? WARNING : INFO;
      case AuditEvent.APPROVAL_REQUESTED,
          AuditEvent.APPROVAL_DECIDED,
          AuditEvent.LIMIT_HIT,
          AuditEvent.SECRET_REDACTED,
          AuditEvent.NETWORK_CREDENTIAL_USED ->
          NOTICE;
      default -> INFO;
    };
  }
}
