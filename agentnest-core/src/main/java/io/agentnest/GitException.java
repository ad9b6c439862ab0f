package io.agentnest;

/** A git operation in a sandbox ({@link Sandbox#git()}) was refused or failed. */
public final class GitException extends CodedException {
  private static final long serialVersionUID = 1L;

  /** Why a git operation did not happen or did not succeed. */
  public enum Reason implements FailureReason {
    /** The image has no git: use the data or browser preset, or an image with git. */
    NO_GIT(Actor.CALLER),
    /** Not an http(s) URL without credentials in it. */
    BAD_URL(Actor.CALLER),
    /** A branch or ref name git's check-ref-format rules refuse, or a bad remote name. */
    BAD_REF(Actor.CALLER),
    /** A repository directory outside the workspace, or no repository there. */
    BAD_PATH(Actor.CALLER),
    /** The remote refused the credentials (or needed some and none were given). */
    AUTH_FAILED(Actor.CALLER),
    /** The remote's host is not on the sandbox's allowlist: the egress proxy refused it. */
    HOST_REFUSED(Actor.CALLER),
    /** Git ran and failed (a conflict, a patch that does not apply, nothing to commit, ...). */
    FAILED(Actor.SANDBOX),
    /** Git's output, or a patch or bundle, is larger than the bound for reading it back. */
    TOO_LARGE(Actor.SANDBOX),
    /** An export could not be written on the host (the directory, the disk). */
    HOST_IO(Actor.OPERATOR);

    private final Actor actor;

    Reason(Actor actor) {
      this.actor = actor;
    }

    @Override
    public Actor actor() {
      return actor;
    }
  }

  public GitException(Reason reason, String message) {
    super(reason, message);
  }

  public GitException(Reason reason, String message, Throwable cause) {
    super(reason, message, cause);
  }

  @Override
  public Reason reason() {
    return (Reason) super.reason();
  }
}
