package io.agentnest;

/** No managed sandbox has the given id (it was destroyed, expired, or never existed). */
public class SandboxNotFoundException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public SandboxNotFoundException(String message) {
    super(message);
  }
}
