package io.agentnest.internal.context;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.RuntimeBackend;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The launcher's start paths, as the parts that start sandboxes (snapshot restore, pools) are
 * handed them: they start sandboxes without importing the launcher, which imports them.
 */
public interface SandboxStarts {
  /** Creates a sandbox from {@code config}, as {@code Sandbox.create} does. */
  SandboxContext create(SandboxConfig config);

  /**
   * Starts a sandbox of {@code config} from the checkpoint image in {@code checkpoint} (its agent
   * runs already, with its state); empty when the backend cannot restore a checkpoint here.
   */
  Optional<SandboxContext> fromCheckpoint(
      RuntimeBackend backend, SandboxConfig config, Path checkpoint);

  /**
   * Hands a pooled member to its user; {@code onRelease} is told once when this process lets it go
   * (destroy or detach).
   */
  Sandbox handOut(
      RuntimeBackend backend,
      BackendSandbox bs,
      AgentChannel channel,
      SandboxConfig config,
      String pool,
      boolean restoreCpuShares,
      Runnable onRelease);

  /** No sandbox starts, or is handed out, while its actions could not be audited. */
  void requireAuditRoom(SandboxConfig config);
}
