package io.agentnest;

/**
 * The sandbox's agent is gone (the sandbox was destroyed, its agent was killed, or it sent data
 * that breaks the protocol). The sandbox can no longer be used; create a new one.
 */
public class SandboxClosedException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public SandboxClosedException(String message) {
    super(message);
  }

  public SandboxClosedException(String message, Throwable cause) {
    super(message, cause);
  }
}
