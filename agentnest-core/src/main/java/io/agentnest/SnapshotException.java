package io.agentnest;

/** A snapshot cannot be saved or restored; the message names the problem and the fix. */
public class SnapshotException extends CodedException {
  private static final long serialVersionUID = 1L;

  /** Why a snapshot failed; {@link #code()} is the spelling in the CLI's JSON output. */
  public enum Reason implements FailureReason {
    /** The snapshot name is not allowed. */
    BAD_NAME(Actor.CALLER),
    /** A snapshot of that name exists (save with overwrite to replace it). */
    EXISTS(Actor.CALLER),
    /** No snapshot of that name. */
    NOT_FOUND(Actor.CALLER),
    /** Its signature or index does not verify: it was changed outside AgentNest. */
    TAMPERED(Actor.OPERATOR),
    /** A part is missing or unreadable. */
    CORRUPT(Actor.OPERATOR),
    /** The sandbox's image differs from the snapshot's, or the engine no longer has it. */
    IMAGE_CHANGED(Actor.OPERATOR),
    /** It was taken with secret variables that the restoring configuration does not supply. */
    NEEDS_CONFIG(Actor.CALLER),
    /** The disk would keep less free space than its reserve. */
    DISK_FULL(Actor.OPERATOR),
    /** The sandbox's state holds a secret's value, which must not be stored. */
    SECRET(Actor.SANDBOX),
    /** An I/O error while saving or restoring. */
    IO(Actor.OPERATOR);

    private final Actor actor;

    Reason(Actor actor) {
      this.actor = actor;
    }

    @Override
    public Actor actor() {
      return actor;
    }
  }

  public SnapshotException(Reason reason, String message) {
    super(reason, message);
  }

  @Override
  public Reason reason() {
    return (Reason) super.reason();
  }
}
