package io.agentnest.cli;

import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.cli.AuditOptions.Dir;
import io.agentnest.cli.AuditOptions.LimitConverter;
import io.agentnest.cli.AuditOptions.Output;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * What happened in one sandbox, from the audit trail: its creation, every command and Python call
 * with its exit, files, network, approvals, limits, its end. The trail is the record here (a
 * sandbox's output is streamed, never stored), so this works after the sandbox is gone too.
 */
@Command(
    name = "logs",
    mixinStandardHelpOptions = true,
    description = {
      "Prints a sandbox's audit records, oldest first: created, each exec and Python call (with"
          + " its exit and duration), files, network, approvals, limits, destroyed. Output itself"
          + " is never stored; this is what ran, also after the sandbox is gone. Same as"
          + " 'agentnest audit tail --sandbox ID'.",
      "  agentnest logs 3f2a9c",
      "  agentnest logs 3f2a9c -f --json"
    })
final class LogsCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "ID", description = "Sandbox id or a prefix of it.")
  String sandbox = "";

  @Option(
      names = {"-n", "--lines"},
      paramLabel = "N",
      description = "The last N records (default: ${DEFAULT-VALUE}).",
      converter = LimitConverter.class,
      defaultValue = "200")
  int lines;

  @Option(
      names = {"-f", "--follow"},
      description = "Keep printing new records as they are written, until interrupted.")
  boolean follow;

  @Mixin Dir dir = new Dir();
  @Mixin Output output = new Output();

  @Override
  public Integer call() {
    if (!sandbox.matches("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")) {
      System.err.println(
          "error: '" + sandbox + "' is not a sandbox id: 'agentnest ls' lists the running ones");
      return ExitCodes.USAGE;
    }
    boolean any;
    try (AuditLog log = AuditLog.open(dir.path())) {
      any = !log.query(AuditQuery.builder().sandbox(sandbox).limit(1).build()).isEmpty();
    }
    if (!any && !follow) {
      System.err.println(
          "error: no audit records for sandbox "
              + sandbox
              + " in "
              + dir.path()
              + ": 'agentnest ls' lists the running sandboxes (records are kept in the"
              + " AGENTNEST_HOME of the user who ran them; --dir reads another)");
      return ExitCodes.NOT_FOUND;
    }
    AuditCommand.Tail tail = new AuditCommand.Tail();
    tail.filter.sandbox = sandbox;
    tail.dir = dir;
    tail.output = output;
    tail.lines = lines;
    tail.follow = follow;
    return tail.call();
  }
}
