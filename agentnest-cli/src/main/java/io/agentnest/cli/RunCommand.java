package io.agentnest.cli;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import io.agentnest.ConfigException;
import io.agentnest.ExecError;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.NetworkPolicy;
import io.agentnest.OutputChunk;
import io.agentnest.RemoteServer;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
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

  @Option(
      names = "--raw",
      description =
          "Write the sandbox's output to the terminal byte for byte. By default, when stdout or"
              + " stderr is a terminal, control sequences in the sandbox's output are shown (ESC as"
              + " ^[) instead of acting, so code cannot repaint the screen, set the title or write"
              + " the clipboard. Pipes and files always get the bytes as they are.")
  boolean raw;

  @Spec CommandSpec spec;

  @Mixin SandboxOptions sandbox = new SandboxOptions();

  @Mixin SecretOptions secrets = new SecretOptions();

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
      throw new ParameterException(
          spec.commandLine(), "nothing to run: give -c CODE, -f FILE, or -- COMMAND ARGS...");
    }
    if (code != null && !command.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(), "give either Python (-c/-f) or a command after --, not both");
    }
    PrintStream out = System.out;
    PrintStream err = System.err;
    boolean outIsTerminal = !raw && Terminals.isTerminal(1);
    TerminalOutput terminal =
        new TerminalOutput(out, err, outIsTerminal, !raw && Terminals.isTerminal(2));
    ExecOptions.Builder opts = ExecOptions.builder();
    if (!json) {
      opts.onOutput(c -> terminal.write(c.stream() == OutputChunk.Stream.STDERR, c.data()));
    }
    ExecResult r;
    Optional<RemoteServer> remote = RemoteServer.fromEnvironment(System.getenv());
    try {
      if (remote.isPresent()) {
        r = runRemote(remote.get(), secrets.applyTo(sandbox.toConfig(terminal), true), code);
        if (!json) {
          terminal.write(false, r.stdout().getBytes(StandardCharsets.UTF_8));
          terminal.write(true, r.stderr().getBytes(StandardCharsets.UTF_8));
        }
      } else {
        try (Sandbox sb = Sandbox.create(secrets.applyTo(sandbox.toConfig(terminal), true))) {
          r = code != null ? sb.runCode(code, opts.build()) : sb.exec(command, opts.build());
        }
      }
    } finally {
      terminal.finish();
    }
    return report(r, json, outIsTerminal, terminal);
  }

  /**
   * Prints a finished call as {@code run} does (the JSON object, or the result, traceback and limit
   * after the streamed output) and returns its exit code ({@link #exitFor}).
   */
  static int report(ExecResult r, boolean json, boolean outIsTerminal, TerminalOutput terminal)
      throws IOException {
    PrintStream out = System.out;
    PrintStream err = System.err;
    if (json) {
      // On a terminal, JSON with every non-ASCII character escaped cannot carry a C1 control.
      out.println(
          outIsTerminal
              ? CliJson.MAPPER
                  .writer()
                  .with(JsonWriteFeature.ESCAPE_NON_ASCII)
                  .writeValueAsString(ResultJson.of(r))
              : ResultJson.of(r).toString());
    } else {
      if (r.result() != null) {
        terminal.write(false, (r.result() + "\n").getBytes(StandardCharsets.UTF_8));
      }
      if (r.error() != null) {
        terminal.write(true, r.error().traceback().getBytes(StandardCharsets.UTF_8));
      }
      terminal.finish();
      if (r.limit() != null) {
        err.println(
            "agentnest: stopped by limit "
                + r.limit()
                + (r.truncated() ? " (output truncated)" : ""));
      }
    }
    return exitFor(r);
  }

  /**
   * README's exit codes for a finished run: a limit that stopped it is 124 whatever the stopped
   * process returned (a killed shell's 143 is the limit's doing); Python's {@code sys.exit(n)} is n
   * and an uncaught exception 1, as {@code python3 -c} gives; an approval refusal inside Python is
   * 7, as one in the shell is; otherwise the command's own status.
   */
  static int exitFor(ExecResult r) {
    if (r.limit() != null) {
      return ExitCodes.LIMIT;
    }
    ExecError e = r.error();
    if (e == null) {
      return r.exitCode();
    }
    if (e.name().equals("SystemExit")) {
      String v = e.value().strip();
      if (v.isEmpty() || v.equals("None")) {
        return ExitCodes.OK;
      }
      try {
        return Integer.parseInt(v) & 0xff;
      } catch (NumberFormatException notANumber) {
        return ExitCodes.FAILED; // sys.exit("message"): Python prints it and exits 1
      }
    }
    if (e.name().equals("PermissionError")
        && e.value().contains("agentnest: ")
        && e.value().contains(" was denied: ")) {
      return ExitCodes.DENIED;
    }
    return r.exitCode() != 0 ? r.exitCode() : ExitCodes.FAILED;
  }

  /**
   * AGENTNEST_URL is set: the sandbox is made on that server, which applies its own policy; only
   * what the HTTP API carries is sent (image, memory, cpus, TTL, environment, egress hosts), and
   * the output is printed when the call returns.
   */
  private ExecResult runRemote(RemoteServer server, SandboxConfig local, @Nullable String code) {
    try (Sandbox sb = Sandbox.create(remoteConfig(server, local))) {
      return code != null ? sb.runCode(code) : sb.exec(command, ExecOptions.defaults());
    }
  }

  /** What of {@code local} the HTTP API carries, for a sandbox on {@code server}. */
  static SandboxConfig remoteConfig(RemoteServer server, SandboxConfig local) {
    SandboxConfig.Builder b =
        SandboxConfig.builder()
            .remote(server)
            .image(local.image())
            .memoryBytes(local.memoryBytes())
            .cpus(local.cpus())
            .ttl(local.ttl())
            .env(local.env())
            .execTimeout(local.execTimeout());
    if (!local.secretEnv().isEmpty()) {
      throw new ConfigException(
          "--secret-env cannot go to a remote server yet: unset AGENTNEST_URL to run locally");
    }
    if (!local.network().isNone()) {
      b.network(NetworkPolicy.allowlist(local.network().rules().toArray(String[]::new)));
    }
    return b.build();
  }
}
