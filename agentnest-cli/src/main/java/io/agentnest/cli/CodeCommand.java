package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** Runs Python in a running sandbox's persistent session. */
@Command(
    name = "code",
    mixinStandardHelpOptions = true,
    description = {
      "Runs Python in a running sandbox's session: variables, imports and files stay for the next"
          + " 'code' call (also from another process), until the sandbox ends. Prints the output,"
          + " the value of the last expression and any traceback, and exits as 'run' does.",
      "  agentnest code 3f2a9c -c 'import pandas as pd; df = pd.read_csv(\"data.csv\")'",
      "  agentnest code 3f2a9c -c 'df.describe()'",
      "  agentnest code 3f2a9c -f analysis.py",
      "  echo 'x * 2' | agentnest code 3f2a9c -f -"
    })
final class CodeCommand implements Callable<Integer> {
  /** Longest program read from stdin. */
  static final int MAX_STDIN_BYTES = 16 << 20;

  static final class What {
    @Option(
        names = {"-c", "--code"},
        description = "Python code to run.")
    @Nullable String code;

    @Option(
        names = {"-f", "--file"},
        description = "Local Python file to run; '-' reads the code from stdin.")
    @Nullable String file;
  }

  @Parameters(index = "0", paramLabel = "ID", description = "Sandbox id or unique prefix.")
  String sandbox = "";

  @ArgGroup(exclusive = true)
  @Nullable What what;

  @Option(
      names = "--session",
      paramLabel = "NAME",
      description = "A named session instead of the default one (made on first use).")
  @Nullable String session;

  @Mixin CallOptions call = new CallOptions();

  @Mixin AttachOptions attach = new AttachOptions();

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    String code = code();
    TerminalOutput terminal = call.terminal();
    ExecResult r;
    Sandbox sb = attach.connect(sandbox, terminal);
    try {
      ExecOptions opts = call.options(terminal);
      String named = session;
      r =
          CallOptions.run(
              () ->
                  named == null
                      ? sb.startCode(code, opts)
                      : sb.pythonSession(named).start(code, opts));
    } finally {
      // Detached, not closed: the session (its interpreter) lives on in the sandbox's agent.
      sb.detach();
      terminal.finish();
    }
    return RunCommand.report(r, call.json, call.outIsTerminal(), terminal);
  }

  private String code() throws IOException {
    if (what != null && what.code != null) {
      return what.code;
    }
    if (what == null || what.file == null) {
      throw new ParameterException(
          spec.commandLine(),
          "nothing to run: give -c CODE, -f FILE, or -f - to read the code from stdin");
    }
    if (what.file.equals("-")) {
      byte[] in = System.in.readNBytes(MAX_STDIN_BYTES + 1);
      if (in.length > MAX_STDIN_BYTES) {
        throw new ConfigException(
            "-f -: the code on stdin is over "
                + (MAX_STDIN_BYTES >> 20)
                + " MiB: upload a"
                + " file ('agentnest upload') and run it from there");
      }
      return new String(in, StandardCharsets.UTF_8);
    }
    Path f = Path.of(what.file);
    if (!Files.isRegularFile(f)) {
      throw new ConfigException("-f " + f + ": no such file");
    }
    return Files.readString(f, StandardCharsets.UTF_8);
  }
}
