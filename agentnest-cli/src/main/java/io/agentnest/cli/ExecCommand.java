package io.agentnest.cli;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** Runs a command in a sandbox made earlier ({@code create}, {@code snapshot restore}). */
@Command(
    name = "exec",
    mixinStandardHelpOptions = true,
    description = {
      "Runs a program in a running sandbox (no shell unless you name one), streams its output as"
          + " 'run' does, and exits with its status; the sandbox keeps running.",
      "  agentnest exec 3f2a9c -- ls -la /workspace",
      "  agentnest exec 3f2a9c -- sh -c 'echo $HOME > out.txt'"
    })
final class ExecCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "ID", description = "Sandbox id or unique prefix.")
  String sandbox = "";

  @Parameters(
      index = "1..*",
      arity = "0..*",
      paramLabel = "CMD",
      description = "Program and arguments (after --).")
  List<String> command = new ArrayList<>();

  @Mixin CallOptions call = new CallOptions();

  @Mixin AttachOptions attach = new AttachOptions();

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    if (command.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(),
          "nothing to run: give the command after --, e.g. agentnest exec "
              + sandbox
              + " -- ls -la");
    }
    TerminalOutput terminal = call.terminal();
    ExecResult r;
    Sandbox sb = attach.connect(sandbox, terminal);
    try {
      ExecOptions opts = call.options(terminal);
      r = CallOptions.run(() -> sb.start(command, opts));
    } finally {
      sb.detach();
      terminal.finish();
    }
    return RunCommand.report(r, call.json, call.outIsTerminal(), terminal);
  }
}
