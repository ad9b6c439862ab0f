package io.agentnest.escapes;

/** What happened when a probe tried its attack. */
public enum Outcome {
  /** The attack failed: the sandbox refused it. */
  BLOCKED,
  /**
   * The attack "worked" only inside the runtime's own kernel (gVisor's Sentry implements the call
   * itself and the host kernel is never reached); the probe states why this is harmless.
   */
  CONTAINED,
  /** The attack got through. The build fails. */
  ESCAPED,
  /** The probe could not tell (it crashed or printed no verdict). The build fails too. */
  ERROR;

  /** Whether this outcome is acceptable. */
  public boolean safe() {
    return this == BLOCKED || this == CONTAINED;
  }
}
