package io.agentnest;

/**
 * A file operation inside the sandbox failed or was refused. {@link #code()} is a stable reason
 * such as {@code BAD_PATH}, {@code NOT_FOUND}, {@code TOO_LARGE}, {@code NO_SPACE}.
 */
public class FileOperationException extends AgentNestException {
  private static final long serialVersionUID = 1L;
  private final String code;

  public FileOperationException(String code, String message) {
    super(message);
    this.code = code;
  }

  /** Stable machine-readable reason. */
  public String code() {
    return code;
  }
}
