package io.agentnest.internal;

import io.agentnest.Sandbox;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.state.StateBudget;
import io.agentnest.spi.support.DaemonThreads;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * State transfer through the agent channel (no bulk link: a remote engine, or a sandbox made before
 * the link existed): captured into spills, then loaded into each copy.
 */
final class ChannelStateFork {
  private ChannelStateFork() {}

  static List<Sandbox> fork(
      DefaultSandbox parent,
      List<CompletableFuture<DefaultSandbox>> kids,
      long t0,
      StateBudget budget,
      ExecutorService threads) {
    try (SandboxState.Spilled state =
        SandboxState.capture(parent.context(), parent.sessionNames(), budget)) {
      List<CompletableFuture<DefaultSandbox>> ready = new ArrayList<>();
      for (CompletableFuture<DefaultSandbox> k : kids) {
        ready.add(
            k.thenApplyAsync(
                child -> {
                  SandboxState.restore(child.context(), state);
                  child.setForkReport(
                      StateTransferReports.report(
                          parent.id(),
                          parent.backend(),
                          parent.config(),
                          parent.attached(),
                          state.variables(),
                          state.skipped(),
                          state.fileBytes(),
                          state.stateBytes(),
                          Duration.ofNanos(System.nanoTime() - t0)));
                  return child;
                },
                threads));
      }
      List<Sandbox> out = new ArrayList<>();
      for (CompletableFuture<DefaultSandbox> r : ready) {
        out.add(DaemonThreads.join(r));
      }
      for (Sandbox s : out) {
        StateTransferReports.audit(
            parent, s, state.fileBytes(), state.stateBytes(), state.skipped().size(), null);
      }
      return out;
    }
  }
}
