package io.agentnest;

import java.io.Serializable;

/**
 * Why a {@link CodedException} was raised: an enum constant per reason, so that callers switch on
 * it instead of comparing strings. Its {@link #code()} is the stable spelling that crosses the wire
 * (the agent's error replies), the CLI's {@code --json} output and tool results.
 */
public interface FailureReason extends Serializable {
  /** The enum constant's name (every implementation is an enum). */
  String name();

  /** The stable machine-readable spelling: the constant's name. */
  default String code() {
    return name();
  }

  /** Who has to act to get past this failure. */
  Actor actor();

  /**
   * Who has to act, in the spirit of picocli's exception tree: the caller fixes the request, the
   * operator fixes the host (disk, permissions, a tampered store), and a sandbox failure is the
   * sandbox's own doing (its agent broke or its content is refused).
   */
  enum Actor {
    /** The request itself is wrong: change the path, name or argument. */
    CALLER,
    /** The host refused or failed: free disk, fix permissions, investigate tampering. */
    OPERATOR,
    /** The sandbox (its agent, files or archives) caused it: nothing the request can change. */
    SANDBOX
  }
}
