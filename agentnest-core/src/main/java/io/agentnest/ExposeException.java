package io.agentnest;

/** {@link Sandbox#expose} refused: the reason says whether to change the port or the host. */
public final class ExposeException extends CodedException {
  private static final long serialVersionUID = 1L;

  /** Why a port was not exposed. */
  public enum Reason implements FailureReason {
    /** Not a TCP port (1 to 65535), or a port the sandbox's own plumbing uses. */
    BAD_PORT(Actor.CALLER),
    /** The host port asked for is taken or cannot be bound on 127.0.0.1. */
    HOST_PORT_UNAVAILABLE(Actor.CALLER),
    /** The sandbox already exposes as many ports as it may. */
    TOO_MANY_PORTS(Actor.CALLER);

    private final Actor actor;

    Reason(Actor actor) {
      this.actor = actor;
    }

    @Override
    public Actor actor() {
      return actor;
    }
  }

  public ExposeException(Reason reason, String message) {
    super(reason, message);
  }

  public ExposeException(Reason reason, String message, Throwable cause) {
    super(reason, message, cause);
  }

  @Override
  public Reason reason() {
    return (Reason) super.reason();
  }
}
