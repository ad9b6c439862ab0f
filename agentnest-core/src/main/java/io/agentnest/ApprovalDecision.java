package io.agentnest;

import java.util.Objects;

/**
 * The answer of an {@link ApprovalHandler}.
 *
 * @param allowed whether the action may go ahead
 * @param reason why, for the audit log and the denial message
 * @param decidedBy who or what decided, e.g. a user name or {@code policy-bot}
 */
public record ApprovalDecision(boolean allowed, String reason, String decidedBy) {
  public ApprovalDecision {
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(decidedBy, "decidedBy");
  }

  public static ApprovalDecision allow(String reason) {
    return new ApprovalDecision(true, reason, "handler");
  }

  public static ApprovalDecision deny(String reason) {
    return new ApprovalDecision(false, reason, "handler");
  }
}
