package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.spi.Labels;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Lists managed sandboxes. */
@Command(
    name = "ls",
    aliases = "list",
    mixinStandardHelpOptions = true,
    description = {
      "Lists the sandboxes AgentNest manages on the backend: the Docker engine, or with --backend"
          + " kubernetes the sandbox pods of every tenant namespace the account may list.",
      "  agentnest ls",
      "  agentnest ls --backend kubernetes --json"
    })
final class ListCommand implements Callable<Integer> {
  @Option(names = "--json", description = "Print a JSON array.")
  boolean json;

  @Option(
      names = "--all-homes",
      description =
          "Every managed sandbox on the engine, not only this AGENTNEST_HOME's (an operator's view).")
  boolean allHomes;

  @Mixin BackendOptions target = new BackendOptions();

  @Override
  public Integer call() {
    List<SandboxInfo> everything = target.open().list();
    List<SandboxInfo> all = new HomeScope(allHomes).filter(everything);
    @Nullable String leftOut = HomeScope.leftOut(everything.size(), all.size());
    if (json) {
      ArrayNode arr = CliJson.MAPPER.createArrayNode();
      for (SandboxInfo s : all) {
        ObjectNode o = arr.addObject();
        o.put("id", s.id()).put("backend", s.backend()).put("image", s.image());
        o.put("runtime", s.runtime()).put("tenant", s.labels().getOrDefault(Labels.TENANT, ""));
        o.put("state", s.state()).put("created", s.created().toString());
        o.put("owner", s.labels().getOrDefault(Labels.OWNER, ""));
        Instant exp = expires(s);
        o.put("expires", exp == null ? "" : exp.toString());
        o.put("pool", s.labels().getOrDefault(Labels.POOL, ""));
        o.put("pool_idle", SandboxPool.isIdleMember(s));
        ObjectNode labels = o.putObject("labels");
        s.labels().forEach(labels::put);
      }
      System.out.println(arr);
      return ExitCodes.OK;
    }
    if (all.isEmpty()) {
      System.out.println("no sandboxes");
      if (leftOut != null) {
        System.out.println(leftOut);
      }
      return ExitCodes.OK;
    }
    System.out.printf(
        "%-12s  %-26s  %-7s  %-12s  %-20s  %s%n",
        "ID", "IMAGE", "RUNTIME", "STATE", "CREATED", "EXPIRES");
    for (SandboxInfo s : all) {
      System.out.printf(
          "%-12s  %-26s  %-7s  %-12s  %-20s  %s%n",
          s.id().substring(0, Math.min(12, s.id().length())),
          s.image(),
          s.runtime(),
          state(s),
          shown(s.created()),
          shownOrBlank(expires(s)));
    }
    if (leftOut != null) {
      System.out.println(leftOut);
    }
    return ExitCodes.OK;
  }

  /**
   * A pool member waiting for a user shows as {@code idle:POOL} (its label expiry is only the idle
   * deadline); a handed-out one shows its engine state.
   */
  private static String state(SandboxInfo s) {
    String pool = s.labels().get(Labels.POOL);
    return pool != null && SandboxPool.isIdleMember(s) ? "idle:" + pool : s.state();
  }

  private static @Nullable Instant expires(SandboxInfo s) {
    String e = s.labels().get(Labels.EXPIRES);
    if (e == null) {
      return null;
    }
    try {
      return Instant.ofEpochSecond(Long.parseLong(e));
    } catch (NumberFormatException ex) {
      return null;
    }
  }

  private static String shownOrBlank(@Nullable Instant t) {
    return t == null ? "" : shown(t);
  }

  /** One format for every time the table shows: 2026-12-07 09:00:00Z. */
  static String shown(Instant t) {
    return t.truncatedTo(ChronoUnit.SECONDS).toString().replace("T", " ");
  }
}
