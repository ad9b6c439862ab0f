package io.agentnest.docker.internal;

import io.agentnest.BackendUnavailableException;
import java.net.URI;

/**
 * Turns a failure to reach the engine into the one error every part of the backend reports, naming
 * the engine's address and how to start it.
 */
record EngineErrors(URI host) {
  BackendUnavailableException unavailable(RuntimeException e) {
    return new BackendUnavailableException(
        "cannot reach the Docker engine at "
            + host
            + " ("
            + rootMessage(e)
            + "): "
            + DockerEngine.START_HINT
            + "; set DOCKER_HOST if it listens elsewhere",
        e);
  }

  /** The innermost cause, which names what went wrong (a refused socket, a missing file). */
  static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String m = t.getMessage();
    return t.getClass().getSimpleName() + (m == null ? "" : ": " + m.strip());
  }
}
