package io.agentnest.cli;

import io.agentnest.Sandbox;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Keeps a running sandbox longer. */
@Command(
    name = "extend",
    mixinStandardHelpOptions = true,
    description = {
      "Moves a running sandbox's expiry DURATION later (its agent, this host's reaper and"
          + " 'agentnest prune' all go by the new time) and prints the new expiry.",
      "  agentnest extend 3f2a9c 1h",
      "  agentnest extend 3f2a9c 1d --json"
    })
final class ExtendCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "ID", description = "Sandbox id or unique prefix.")
  String sandbox = "";

  @Parameters(
      index = "1",
      paramLabel = "DURATION",
      description = "How much longer, e.g. 30m, 2h, 1d.")
  String duration = "";

  @Option(names = "--json", description = "Print {\"id\":..., \"expires_at\":...} as JSON.")
  boolean json;

  @Override
  public Integer call() {
    Duration more = Durations.parse("DURATION", duration);
    Sandbox sb = Attach.connect(sandbox);
    Instant expires;
    try {
      sb.extend(more);
      expires = sb.expiresAt();
    } finally {
      sb.detach();
    }
    if (json) {
      System.out.println(CliJson.object().put("id", sb.id()).put("expires_at", expires.toString()));
    } else {
      System.out.println(
          "sandbox "
              + Attach.short12(sb.id())
              + " now expires at "
              + expires
              + " (in "
              + CreateCommand.human(Duration.between(Instant.now(), expires))
              + ")");
    }
    return ExitCodes.OK;
  }
}
