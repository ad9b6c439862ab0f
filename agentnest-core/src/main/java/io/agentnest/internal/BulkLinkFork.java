package io.agentnest.internal;

import io.agentnest.AgentNestException;
import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.internal.files.SandboxArchives;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.state.StateBudget;
import io.agentnest.spi.support.BulkLink;
import io.agentnest.spi.support.DaemonThreads;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * State transfer over the bulk links (see {@link BulkLink}): the tars of the workspace and the
 * scratch space and, alongside, each session's pickle stream from the parent into all copies at
 * once, unpacked and unpickled there as they arrive.
 */
final class BulkLinkFork {
  private BulkLinkFork() {}

  static List<Sandbox> fork(
      DefaultSandbox parent,
      Path dir,
      List<CompletableFuture<DefaultSandbox>> kids,
      long t0,
      StateBudget budget,
      ExecutorService threads) {
    List<String> names = parent.sessionNames();
    List<SandboxState.Copy> copies = new ArrayList<>();
    try (BulkLink link = BulkLink.open(dir)) {
      Supplier<List<SandboxState.Copy>> ready =
          () -> {
            synchronized (copies) {
              return readyCopies(parent, copies, kids);
            }
          };
      BooleanSupplier started = () -> kids.stream().allMatch(CompletableFuture::isDone);
      // Files and sessions travel at once: the link sorts connections by their tokens.
      CompletableFuture<Long> files =
          CompletableFuture.supplyAsync(
              () ->
                  (parent.config().readOnlyWorkspace()
                          ? 0L
                          : SandboxState.relayFiles(
                              parent.context(),
                              link,
                              SandboxArchives.WORKSPACE,
                              started,
                              ready,
                              budget))
                      + SandboxState.relayFiles(
                          parent.context(), link, SandboxArchives.TMP, started, ready, budget),
              threads);
      List<SandboxState.Dumped> sessions = new ArrayList<>();
      try {
        for (String name : names) {
          SandboxState.Dumped d =
              SandboxState.relaySession(parent.context(), link, name, started, ready, budget);
          if (d != null) {
            sessions.add(d);
          }
        }
      } finally {
        // Never leave the files' transfer running on a link about to close.
        try {
          files.join();
        } catch (RuntimeException e) {
          // reported below, or superseded by the sessions' failure
        }
      }
      long fileBytes = DaemonThreads.join(files);
      long stateBytes = sessions.stream().mapToLong(SandboxState.Dumped::bytes).sum();
      Map<String, List<String>> vars = new LinkedHashMap<>();
      List<ForkReport.Skipped> skipped = new ArrayList<>();
      sessions.forEach(
          d -> {
            vars.put(d.name(), d.variables());
            skipped.addAll(d.skipped());
          });
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      List<Sandbox> out = new ArrayList<>();
      for (CompletableFuture<DefaultSandbox> k : kids) {
        DefaultSandbox child = DaemonThreads.join(k);
        child.setForkReport(
            StateTransferReports.report(
                parent.id(),
                parent.backend(),
                parent.config(),
                parent.attached(),
                vars,
                skipped,
                fileBytes,
                stateBytes,
                took));
        StateTransferReports.audit(parent, child, fileBytes, stateBytes, skipped.size(), "bulk");
        out.add(child);
      }
      return out;
    } finally {
      copies.forEach(c -> c.link().close());
    }
  }

  /** The copies with their bulk links, opened once (the copies must have started). */
  private static List<SandboxState.Copy> readyCopies(
      DefaultSandbox parent,
      List<SandboxState.Copy> copies,
      List<CompletableFuture<DefaultSandbox>> kids) {
    if (copies.isEmpty()) {
      for (CompletableFuture<DefaultSandbox> k : kids) {
        DefaultSandbox child = DaemonThreads.join(k);
        Path kidDir =
            parent
                .backend()
                .bulkDirectory(child.id())
                .orElseThrow(
                    () ->
                        new AgentNestException(
                            "copy "
                                + child.id()
                                + " of a sandbox with a bulk link has none: the engine"
                                + " changed meanwhile; fork again"));
        copies.add(new SandboxState.Copy(child.context(), BulkLink.open(kidDir)));
      }
    }
    return copies;
  }
}
