package io.agentnest.internal;

import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Fork with process memory where the runtime checkpoints (gVisor): the parent is checkpointed and
 * restored in place, and the same checkpoint is restored into each copy.
 */
final class CheckpointFork {
  private CheckpointFork() {}

  /** The copies, or empty when the backend cannot checkpoint; the caller then transfers state. */
  static Optional<List<Sandbox>> fork(DefaultSandbox parent, int n, long t0) {
    SandboxConfig config = parent.config();
    RuntimeBackend backend = parent.backend();
    AgentChannel channel = parent.channel();
    List<String> names = parent.sessionNames();
    SandboxSpec spec = SecurityPolicy.specFor(config);
    Optional<List<BackendSandbox>> kids;
    try {
      kids = backend.forkWithCheckpoint(parent.id(), spec, n, channel::suspend, channel::resume);
    } catch (RuntimeException e) {
      if (!channel.isAlive() || channel.isSuspended()) {
        channel.close();
      }
      throw e;
    }
    if (kids.isEmpty()) {
      return Optional.empty();
    }
    List<DefaultSandbox> made = new ArrayList<>();
    try {
      for (BackendSandbox bs : kids.get()) {
        made.add(SandboxLauncher.adoptRestored(backend, bs, config, spec));
      }
    } catch (RuntimeException | Error e) {
      made.forEach(DefaultSandbox::destroy);
      for (BackendSandbox bs : kids.get().subList(made.size(), kids.get().size())) {
        bs.close();
        backend.destroy(bs.id());
      }
      throw e;
    }
    Map<String, List<String>> sessionsCarried = new LinkedHashMap<>();
    names.forEach(nm -> sessionsCarried.put(nm, List.of()));
    List<ForkReport.Skipped> skipped =
        config.network().isNone()
            ? List.of()
            : List.of(
                new ForkReport.Skipped(
                    "*",
                    "egress connections",
                    "socket",
                    "connections through the egress proxy that were open at fork time stay"
                        + " with the parent; the copy opens its own"));
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    List<Sandbox> out = new ArrayList<>();
    for (DefaultSandbox child : made) {
      child.setForkReport(
          new ForkReport(
              parent.id(), ForkReport.Mode.CHECKPOINT, sessionsCarried, skipped, 0, 0, took));
      Map<String, Object> d = new LinkedHashMap<>();
      d.put("child", child.id());
      d.put("mode", ForkReport.Mode.CHECKPOINT.name());
      d.put("sessions", names.size());
      parent.audit("sandbox.forked", d);
      out.add(child);
    }
    return Optional.of(out);
  }
}
