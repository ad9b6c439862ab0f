package io.agentnest.cli;

import io.agentnest.SandboxInfo;
import io.agentnest.spi.RuntimeBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Destroys sandboxes by id. */
@Command(
    name = "rm",
    aliases = "remove",
    mixinStandardHelpOptions = true,
    description = {
      "Destroys sandboxes by id (or unique id prefix) on the backend (--backend kubernetes: sandbox"
          + " pods, with everything they own).",
      "  agentnest rm 3f2a9c",
      "  agentnest rm --backend kubernetes --all"
    })
final class RemoveCommand implements Callable<Integer> {
  @Parameters(arity = "0..*", description = "Sandbox ids or prefixes.")
  List<String> ids = new ArrayList<>();

  @Option(
      names = "--all",
      description =
          "Destroy every managed sandbox of this AGENTNEST_HOME (with --all-homes: of the engine).")
  boolean all;

  @Option(
      names = "--all-homes",
      description = "With --all: every managed sandbox on the engine, other homes' and users' too.")
  boolean allHomes;

  @Mixin BackendOptions target = new BackendOptions();

  @Override
  public Integer call() {
    if (ids.isEmpty() && !all) {
      System.err.println("error: give sandbox ids or --all; see 'agentnest ls'");
      return ExitCodes.USAGE;
    }
    RuntimeBackend backend = target.open();
    List<String> targets = new ArrayList<>(ids);
    if (all) {
      List<SandboxInfo> everything = backend.list();
      List<SandboxInfo> mine = new HomeScope(allHomes).filter(everything);
      mine.forEach(s -> targets.add(s.id()));
      @Nullable String leftOut = HomeScope.leftOut(everything.size(), mine.size());
      if (leftOut != null) {
        System.err.println("left alone: " + leftOut);
      }
    }
    int rc = ExitCodes.OK;
    for (String id : targets) {
      Optional<SandboxInfo> info = backend.inspect(id);
      if (info.isEmpty()) {
        System.err.println("error: no sandbox " + id + " (see 'agentnest ls')");
        rc = ExitCodes.NOT_FOUND;
        continue;
      }
      String found = info.get().id();
      backend.destroy(found);
      DestroyedRecord.write(found, false, "removed with 'agentnest rm'");
      System.out.println("removed " + found.substring(0, Math.min(12, found.length())));
    }
    return rc;
  }
}
