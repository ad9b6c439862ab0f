package io.agentnest.server.http;

import java.util.Locale;

/** The {@code error.code} of every refusal; its wire spelling is the lower-case name. */
public enum ErrorCode {
  UNAUTHENTICATED,
  CSRF,
  FORBIDDEN,
  KEY_REVOKED,
  KEY_EXPIRED,
  NOT_FOUND,
  METHOD_NOT_ALLOWED,
  MALFORMED_JSON,
  UNKNOWN_FIELD,
  INVALID_FIELD,
  BODY_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE,
  BAD_PATH,
  POLICY,
  APPROVAL_DENIED,
  QUOTA,
  FILE,
  SNAPSHOT,
  SANDBOX_FAILED,
  INTERNAL;

  public String wire() {
    return name().toLowerCase(Locale.ROOT);
  }
}
