package io.agentnest.server.tenancy;

/**
 * The shared store did not answer (the database is down, unreachable or refused the server): a
 * request that needs it gets a 503 naming the problem, and the server keeps running.
 */
public final class StoreUnavailableException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
