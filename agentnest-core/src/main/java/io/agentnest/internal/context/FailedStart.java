package io.agentnest.internal.context;

import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.RuntimeBackend;
import org.jspecify.annotations.Nullable;

/**
 * What every start path does when it fails after the backend made the sandbox (create, a pooled
 * member's start, the adoption of a restored copy): nothing of it may outlive the failure.
 */
public final class FailedStart {
  private FailedStart() {}

  /**
   * Closes the connection (through {@code channel} once one was opened on it) and destroys the
   * sandbox; a failure of that clean-up is added to {@code cause}, which the caller rethrows.
   */
  public static void discard(
      RuntimeBackend backend, BackendSandbox bs, @Nullable AgentChannel channel, Throwable cause) {
    if (channel != null) {
      channel.close();
    } else {
      bs.close();
    }
    try {
      backend.destroy(bs.id());
    } catch (RuntimeException cleanup) {
      cause.addSuppressed(cleanup);
    }
  }
}
