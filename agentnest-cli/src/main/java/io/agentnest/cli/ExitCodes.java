package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.SnapshotException;

/** Exit codes scripts can rely on. {@code agentnest run} exits with the code's own status. */
public final class ExitCodes {
  public static final int OK = 0;

  /** A check or operation failed. */
  public static final int FAILED = 1;

  /** Bad command line (picocli's usage error). */
  public static final int USAGE = 2;

  /** The backend (Docker engine) is not reachable. */
  public static final int BACKEND_UNAVAILABLE = 3;

  /** The image is missing or cannot run the agent. */
  public static final int IMAGE_MISSING = 4;

  /** Invalid configuration. */
  public static final int CONFIG = 5;

  /** No such sandbox. */
  public static final int NOT_FOUND = 6;

  /** An operation was refused by the approval rules or the approval handler. */
  public static final int DENIED = 7;

  /** The execution hit a limit (timeout, output, memory); used by run when the code had none. */
  public static final int LIMIT = 124;

  private ExitCodes() {}

  /** The exit code for a command that failed with {@code ex}: the one place that maps them. */
  static int of(Throwable ex) {
    if (ex instanceof BackendUnavailableException) {
      return BACKEND_UNAVAILABLE;
    }
    if (ex instanceof ImageNotFoundException) {
      return IMAGE_MISSING;
    }
    if (ex instanceof ConfigException) {
      return CONFIG;
    }
    if (ex instanceof SnapshotException se) {
      return SnapshotCommand.exitCodeOf(se);
    }
    if (ex instanceof SandboxNotFoundException) {
      return NOT_FOUND;
    }
    if (ex instanceof ApprovalDeniedException) {
      return DENIED;
    }
    if (ex instanceof AgentNestException) {
      return FAILED;
    }
    return FAILED;
  }
}
