package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.OutputChunk;
import io.agentnest.Sandbox;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** One-shot execution in a fresh sandbox. */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    description = {
      "Runs Python code or a shell command in a fresh sandbox, streams its output, destroys the"
          + " sandbox, and exits with the code's status.",
      "  agentnest run -c 'print(1)'",
      "  agentnest run -f script.py",
      "  agentnest run -- ls -la /"
    })
final class RunCommand implements Callable<Integer> {
  static final class What {
    @Option(
        names = {"-c", "--code"},
        description = "Python code to run.")
    @Nullable String code;

    @Option(
        names = {"-f", "--file"},
        description = "Local Python file to run.")
    @Nullable Path file;
  }

  @ArgGroup(exclusive = true)
  @Nullable What what;

  @Parameters(description = "Command and arguments to run (after --).", arity = "0..*")
  List<String> command = new ArrayList<>();

  @Option(
      names = "--json",
      description = "Print the result as one JSON object instead of streaming.")
  boolean json;

  @Mixin SandboxOptions sandbox = new SandboxOptions();

  @Mixin SecretOptions secrets = new SecretOptions();

  private io.agentnest.SandboxConfig config() {
    return secrets.applyTo(sandbox.toConfig(), true);
  }

  @Override
  public Integer call() throws IOException {
    String code = null;
    if (what != null && what.code != null) {
      code = what.code;
    } else if (what != null && what.file != null) {
      if (!Files.isRegularFile(what.file)) {
        throw new ConfigException("-f " + what.file + ": no such file");
      }
      code = Files.readString(what.file, StandardCharsets.UTF_8);
    }
    if (code == null && command.isEmpty()) {
      throw new ConfigException("nothing to run: give -c CODE, -f FILE, or -- COMMAND ARGS...");
    }
    if (code != null && !command.isEmpty()) {
      throw new ConfigException("give either Python (-c/-f) or a command after --, not both");
    }
    PrintStream out = System.out;
    PrintStream err = System.err;
    ExecOptions.Builder opts = ExecOptions.builder();
    if (!json) {
      opts.onOutput(
          c -> {
            PrintStream target = c.stream() == OutputChunk.Stream.STDERR ? err : out;
            target.write(c.data(), 0, c.data().length);
            target.flush();
          });
    }
    ExecResult r;
    try (Sandbox sb = Sandbox.create(config())) {
      r = code != null ? sb.runCode(code, opts.build()) : sb.exec(command, opts.build());
    }
    if (json) {
      out.println(ResultJson.of(r).toString());
    } else {
      if (r.result() != null) {
        out.println(r.result());
      }
      if (r.error() != null) {
        err.print(r.error().traceback());
      }
      if (r.limit() != null) {
        err.println(
            "agentnest: stopped by limit "
                + r.limit()
                + (r.truncated() ? " (output truncated)" : ""));
      }
    }
    if (r.exitCode() != 0) {
      return r.exitCode();
    }
    return r.limit() != null ? ExitCodes.LIMIT : ExitCodes.OK;
  }
}
