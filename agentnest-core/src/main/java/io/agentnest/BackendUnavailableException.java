package io.agentnest;

/** The isolation backend (e.g. the Docker engine) cannot be reached or is not usable. */
public class BackendUnavailableException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public BackendUnavailableException(String message) {
    super(message);
  }

  public BackendUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
