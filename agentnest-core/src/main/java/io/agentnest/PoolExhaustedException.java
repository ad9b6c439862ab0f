package io.agentnest;

/** A {@link SandboxPool} had handed out {@code max_total} sandboxes and none came free in time. */
public final class PoolExhaustedException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public PoolExhaustedException(String message) {
    super(message);
  }
}
