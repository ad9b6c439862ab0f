package io.agentnest;

/**
 * An {@link AgentNestException} that carries a typed {@link FailureReason}: subclasses narrow
 * {@link #reason()} to their own enum. {@link #code()} is the reason's stable spelling for JSON and
 * the wire; compare {@link #reason()}, never the code string.
 */
public abstract class CodedException extends AgentNestException {
  private static final long serialVersionUID = 1L;
  private final FailureReason reason;

  protected CodedException(FailureReason reason, String message) {
    super(message);
    this.reason = reason;
  }

  protected CodedException(FailureReason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  /** Why it failed. */
  public FailureReason reason() {
    return reason;
  }

  /** The reason's stable machine-readable spelling, e.g. {@code BAD_PATH}. */
  public final String code() {
    return reason.code();
  }
}
