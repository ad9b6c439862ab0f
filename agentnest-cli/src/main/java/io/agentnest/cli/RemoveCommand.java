package io.agentnest.cli;

import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Destroys sandboxes by id. */
@Command(
    name = "rm",
    aliases = "remove",
    mixinStandardHelpOptions = true,
    description = "Destroys sandboxes by id (or unique id prefix).")
final class RemoveCommand implements Callable<Integer> {
  @Parameters(arity = "0..*", description = "Sandbox ids or prefixes.")
  List<String> ids = new ArrayList<>();

  @Option(names = "--all", description = "Destroy every managed sandbox.")
  boolean all;

  @Override
  public Integer call() {
    RuntimeBackend docker = Backends.get("docker");
    List<String> targets = new ArrayList<>(ids);
    if (all) {
      Sandbox.list().forEach(s -> targets.add(s.id()));
    }
    if (targets.isEmpty()) {
      System.err.println("error: give sandbox ids or --all; see 'agentnest ls'");
      return ExitCodes.USAGE;
    }
    int rc = ExitCodes.OK;
    for (String id : targets) {
      Optional<SandboxInfo> info = docker.inspect(id);
      if (info.isEmpty()) {
        System.err.println("error: no sandbox " + id + " (see 'agentnest ls')");
        rc = ExitCodes.NOT_FOUND;
        continue;
      }
      docker.destroy(info.get().id());
      System.out.println("removed " + info.get().id().substring(0, 12));
    }
    return rc;
  }
}
