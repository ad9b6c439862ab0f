package io.agentnest;

/**
 * Root of every error AgentNest raises. Each message says what went wrong and what to do about it.
 */
public class AgentNestException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public AgentNestException(String message) {
    super(message);
  }

  public AgentNestException(String message, Throwable cause) {
    super(message, cause);
  }
}
