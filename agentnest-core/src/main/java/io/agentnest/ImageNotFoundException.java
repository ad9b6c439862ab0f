package io.agentnest;

/** The sandbox image does not exist on the backend, or cannot run the agent (no python3). */
public class ImageNotFoundException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public ImageNotFoundException(String message) {
    super(message);
  }
}
