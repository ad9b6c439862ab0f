package io.agentnest;

/**
 * The selected backend cannot enforce a control the configuration asks for, so the sandbox is not
 * created (fail closed). The message names the control.
 */
public class UnsupportedControlException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public UnsupportedControlException(String message) {
    super(message);
  }
}
