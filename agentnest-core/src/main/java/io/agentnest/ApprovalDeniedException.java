package io.agentnest;

/**
 * An operation was refused by the sandbox's {@link ApprovalPolicy}: a rule denies it, or it needed
 * an approval that was refused or did not arrive in time. Nothing of it ran.
 */
public class ApprovalDeniedException extends AgentNestException {
  private static final long serialVersionUID = 1L;
  private final String kind;
  private final String target;
  private final String reason;

  public ApprovalDeniedException(String kind, String target, String reason) {
    super(
        kind
            + " '"
            + target
            + "' was not run: "
            + reason
            + ". Change the approval rules (SandboxConfig.approvals, YAML 'approvals:') or the"
            + " approval handler if it should be allowed");
    this.kind = kind;
    this.target = target;
    this.reason = reason;
  }

  /** What was refused: {@code shell}, {@code file.delete}, {@code system.modify}, ... */
  public String kind() {
    return kind;
  }

  /** The command or path refused. */
  public String target() {
    return target;
  }

  /** Why: the rule or the handler's reason. */
  public String reason() {
    return reason;
  }
}
