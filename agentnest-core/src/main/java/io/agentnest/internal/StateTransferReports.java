package io.agentnest.internal;

import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.RuntimeBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The report and the audit record of a fork that transferred state (both transfer paths). */
final class StateTransferReports {
  private StateTransferReports() {}

  static ForkReport report(
      String parentId,
      RuntimeBackend backend,
      SandboxConfig config,
      boolean attached,
      Map<String, List<String>> vars,
      List<ForkReport.Skipped> skipped,
      long fileBytes,
      long stateBytes,
      Duration took) {
    List<ForkReport.Skipped> all = skipped;
    if (ForkPath.withheldForSecrets(backend, config, attached)) {
      all = new ArrayList<>(skipped);
      all.add(
          new ForkReport.Skipped(
              "*",
              "process memory",
              "checkpoint",
              (attached
                      ? "not copied: this handle attached to a running sandbox and cannot know"
                          + " whether it has secret variables, whose values would be in its"
                          + " memory; fork from the handle that created it to copy memory. "
                      : "not copied: the sandbox has secret variables, whose values are in its"
                          + " memory, and ")
                  + "a checkpoint writes memory to disk (the engine's disk on gVisor, a migration"
                  + " file for a microVM guest); files and sessions were transferred instead"));
    }
    return new ForkReport(
        parentId, ForkReport.Mode.STATE_TRANSFER, vars, all, fileBytes, stateBytes, took);
  }

  static void audit(
      DefaultSandbox parent,
      Sandbox child,
      long fileBytes,
      long stateBytes,
      int skipped,
      @Nullable String link) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("child", child.id());
    d.put("mode", ForkReport.Mode.STATE_TRANSFER.name());
    d.put("file_bytes", fileBytes);
    d.put("state_bytes", stateBytes);
    d.put("skipped", skipped);
    if (link != null) {
      d.put("link", link);
    }
    parent.audit("sandbox.forked", d);
  }
}
