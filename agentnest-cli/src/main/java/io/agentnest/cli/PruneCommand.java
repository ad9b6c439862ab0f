package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.Sandbox;
import java.time.Duration;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Removes leftovers: expired, orphaned and stopped sandboxes, and stale host-side state. */
@Command(
    name = "prune",
    mixinStandardHelpOptions = true,
    description = {
      "Removes what AgentNest manages and nobody needs any more: sandboxes past their TTL,"
          + " sandboxes whose owner process is gone (crashed or killed host), stopped ones, their"
          + " networks and volumes, and host-side state of sandboxes that no longer exist. With"
          + " --backend kubernetes, the same for sandbox pods in the tenant namespaces.",
      "  agentnest prune --dry-run",
      "  agentnest prune --backend kubernetes",
      "  agentnest prune --older-than 2h",
      "  agentnest prune --all"
    })
final class PruneCommand implements Callable<Integer> {
  @Option(names = "--dry-run", description = "Show what would be removed; remove nothing.")
  boolean dryRun;

  @Option(names = "--all", description = "Remove every managed sandbox, also live ones.")
  boolean all;

  @Option(names = "--older-than", description = "Only resources created longer ago, e.g. 2h, 30m.")
  @Nullable String olderThan;

  @Option(names = "--json", description = "Print the report as JSON.")
  boolean json;

  @Mixin BackendOptions target = new BackendOptions();

  @Override
  public Integer call() {
    Duration older = olderThan == null ? null : Durations.parse("--older-than", olderThan);
    // open() configures the shared backend instance that Sandbox.prune then uses by name.
    String backend = target.open().name();
    PruneReport report = Sandbox.prune(backend, new PruneOptions(all, older, dryRun));
    boolean failed = report.items().stream().anyMatch(i -> i.error() != null);
    for (PruneReport.Item i : report.items()) {
      if (i.removed() && DestroyedRecord.SANDBOX_KINDS.contains(i.kind())) {
        DestroyedRecord.write(
            i.id(),
            i.reason().startsWith("expired"),
            "pruned with 'agentnest prune': " + i.reason());
      }
    }
    if (json) {
      ObjectNode root = CliJson.object();
      root.put("dry_run", report.dryRun());
      root.put("freed_bytes", report.freedBytes());
      root.put("state_files_removed", report.stateFilesRemoved());
      ArrayNode arr = root.putArray("items");
      for (PruneReport.Item i : report.items()) {
        ObjectNode o = arr.addObject();
        o.put("kind", i.kind()).put("id", i.id()).put("reason", i.reason());
        o.put("size_bytes", i.sizeBytes()).put("removed", i.removed());
        if (i.error() != null) {
          o.put("error", i.error());
        }
      }
      System.out.println(root);
      return failed ? ExitCodes.FAILED : ExitCodes.OK;
    }
    if (report.items().isEmpty()) {
      System.out.println("nothing to prune");
    }
    for (PruneReport.Item i : report.items()) {
      String verb = report.dryRun() ? "would remove" : i.removed() ? "removed" : "FAILED";
      System.out.printf(
          "%-12s %-9s %-12s %s%s%n",
          verb, i.kind(), shortId(i.id()), i.reason(), i.error() == null ? "" : ": " + i.error());
    }
    if (report.stateFilesRemoved() > 0) {
      System.out.printf(
          "%s %d stale host state file(s)%n",
          report.dryRun() ? "would remove" : "removed", report.stateFilesRemoved());
    }
    if (!report.dryRun()) {
      System.out.printf("freed %.1f MiB%n", report.freedBytes() / (1024.0 * 1024.0));
    }
    return failed ? ExitCodes.FAILED : ExitCodes.OK;
  }

  /** An engine id as its 12-character prefix; a path (a bulk directory) whole. */
  static String shortId(String id) {
    return id.matches("[0-9a-f]{13,}") ? id.substring(0, 12) : id;
  }
}
