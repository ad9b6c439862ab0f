package io.agentnest;

/**
 * A file operation inside the sandbox (or a transfer between host and sandbox) failed or was
 * refused; {@link #reason()} says why, the message names the path and the fix.
 */
public class FileOperationException extends CodedException {
  private static final long serialVersionUID = 1L;

  /** Why a file operation failed; {@link #code()} is the spelling on the wire and in JSON. */
  public enum Reason implements FailureReason {
    /** The path is absolute, contains {@code ..} or a NUL, or leads out through a symlink. */
    BAD_PATH(Actor.CALLER),
    /** Nothing at that path (in the sandbox, or on the host for an upload). */
    NOT_FOUND(Actor.CALLER),
    /** The path is a directory or a special file where a regular file was needed. */
    NOT_A_FILE(Actor.CALLER),
    /** A directory was needed, or a parent of the path is not one. */
    NOT_A_DIRECTORY(Actor.CALLER),
    /** The path is a directory. */
    IS_A_DIRECTORY(Actor.CALLER),
    /** Something already exists there. */
    EXISTS(Actor.CALLER),
    /** A non-empty directory was deleted without {@code recursive}. */
    NOT_EMPTY(Actor.CALLER),
    /** A read, upload, export or archive exceeds its byte cap. */
    TOO_LARGE(Actor.CALLER),
    /** A glob, directory or archive has more entries than the cap. */
    TOO_MANY(Actor.CALLER),
    /** An artifact pattern is not a valid workspace-relative glob. */
    BAD_GLOB(Actor.CALLER),
    /** A file matched for export is a symlink (never followed). */
    SYMLINK(Actor.SANDBOX),
    /** A file name holds a secret's value, so it cannot leave the sandbox as it is. */
    SECRET_IN_NAME(Actor.SANDBOX),
    /** The sandbox's workspace size limit is reached. */
    NO_SPACE(Actor.SANDBOX),
    /** The workspace is read-only (readOnlyWorkspace). */
    READ_ONLY(Actor.CALLER),
    /** An archive entry was refused inside the sandbox (traversal, link, device, duplicate). */
    BAD_ENTRY(Actor.SANDBOX),
    /** An archive cannot be read or unpacked. */
    BAD_ARCHIVE(Actor.SANDBOX),
    /** An archive entry was refused on the host (traversal, link, device). */
    ARCHIVE_REFUSED(Actor.SANDBOX),
    /** An I/O error inside the sandbox. */
    IO(Actor.SANDBOX),
    /** An I/O error on the host (the destination directory, a temporary file). */
    HOST_IO(Actor.OPERATOR),
    /** The sandbox agent failed, or answered with a code this host does not know. */
    AGENT(Actor.SANDBOX);

    private final Actor actor;

    Reason(Actor actor) {
      this.actor = actor;
    }

    @Override
    public Actor actor() {
      return actor;
    }

    /**
     * The reason an agent's error reply names. The code comes from the sandbox, so it is untrusted:
     * anything this host does not know becomes {@link #AGENT}.
     */
    public static Reason fromWire(String code) {
      for (Reason r : values()) {
        if (r.name().equals(code)) {
          return r;
        }
      }
      return AGENT;
    }
  }

  public FileOperationException(Reason reason, String message) {
    super(reason, message);
  }

  @Override
  public Reason reason() {
    return (Reason) super.reason();
  }
}
