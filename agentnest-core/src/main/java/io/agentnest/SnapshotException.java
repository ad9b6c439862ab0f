package io.agentnest;

/** A snapshot cannot be saved or restored; the message names the problem and the fix. */
public class SnapshotException extends AgentNestException {
  private static final long serialVersionUID = 1L;
  private final String code;

  public SnapshotException(String code, String message) {
    super(message);
    this.code = code;
  }

  /**
   * Stable reason: BAD_NAME, EXISTS, NOT_FOUND, TAMPERED, CORRUPT, IMAGE_CHANGED, NEEDS_CONFIG,
   * DISK_FULL (the disk would keep less free space than its reserve).
   */
  public String code() {
    return code;
  }
}
