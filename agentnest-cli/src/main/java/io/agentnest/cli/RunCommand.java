package io.agentnest.cli;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import io.agentnest.ConfigException;
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

  @Option(
      names = "--raw",
      description =
          "Write the sandbox's output to the terminal byte for byte. By default, when stdout or"
              + " stderr is a terminal, control sequences in the sandbox's output are shown (ESC as"
              + " ^[) instead of acting, so code cannot repaint the screen, set the title or write"
              + " the clipboard. Pipes and files always get the bytes as they are.")
  boolean raw;

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
      throw new ConfigException("nothing to run: give -c CODE, -f FILE, or -- COMMAND ARGS...");
    }
    if (code != null && !command.isEmpty()) {
      throw new ConfigException("give either Python (-c/-f) or a command after --, not both");
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
    if (r.exitCode() != 0) {
      return r.exitCode();
    }
    return r.limit() != null ? ExitCodes.LIMIT : ExitCodes.OK;
  }

  /**
   * AGENTNEST_URL is set: the sandbox is made on that server, which applies its own policy; only
   * what the HTTP API carries is sent (image, memory, cpus, TTL, environment, egress hosts), and
   * the output is printed when the call returns.
   */
  private ExecResult runRemote(RemoteServer server, SandboxConfig local, @Nullable String code) {
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
    try (Sandbox sb = Sandbox.create(b.build())) {
      return code != null ? sb.runCode(code) : sb.exec(command, ExecOptions.defaults());
    }
  }
}
