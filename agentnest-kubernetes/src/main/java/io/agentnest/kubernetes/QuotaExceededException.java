package io.agentnest.kubernetes;

import io.agentnest.AgentNestException;

/**
 * A tenant's ResourceQuota has no room for another sandbox. The message names the quota, what the
 * sandbox asked for, what is used and what is allowed; the fix is to destroy sandboxes of that
 * tenant or to raise its quota.
 */
public final class QuotaExceededException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public QuotaExceededException(String message, Throwable cause) {
    super(message, cause);
  }
}
