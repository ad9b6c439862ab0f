package io.agentnest.cli;

import io.agentnest.SandboxClosedException;
import io.agentnest.text.HumanText;
import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code agentnest} command. */
@Command(
    name = "agentnest",
    mixinStandardHelpOptions = true,
    versionProvider = AgentNestCli.Version.class,
    description = "Secure, self-hosted execution sandboxes for AI agents.",
    subcommands = {
      DemoCommand.class,
      DoctorCommand.class,
      RunCommand.class,
      CreateCommand.class,
      ExecCommand.class,
      CodeCommand.class,
      ShellCommand.class,
      LogsCommand.class,
      ExtendCommand.class,
      ListCommand.class,
      RemoveCommand.class,
      PruneCommand.class,
      ImageCommand.class,
      BenchCommand.class,
      ConfigCommand.class,
      AuditCommand.class,
      McpCommand.class,
      ArtifactsCommand.class,
      UploadCommand.class,
      SnapshotCommand.class,
      ServeCommand.class,
      EngineCommand.class,
      TenantCommand.class,
      CommandLine.HelpCommand.class
    })
public final class AgentNestCli implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.exit(execute(args));
  }

  /** Runs the CLI and returns its exit code (used by tests). */
  public static int execute(String... args) {
    CommandLine cl = new CommandLine(new AgentNestCli());
    cl.setParameterExceptionHandler(AgentNestCli::usageError);
    cl.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          cmd.getErr().println(failureLine(ex, EXITING.get()));
          if (System.getenv("AGENTNEST_DEBUG") != null) {
            ex.printStackTrace(cmd.getErr());
          }
          return ExitCodes.of(ex);
        });
    return cl.execute(args);
  }

  /** Set when the JVM starts shutting down (^C, SIGTERM, a closed terminal). */
  private static final AtomicBoolean EXITING = new AtomicBoolean();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> EXITING.set(true), "agentnest-exiting"));
  }

  /**
   * The line for a command that failed with {@code ex}. While the process is on its way out, the
   * call that failed was cut short by it: {@code run}'s sandbox is destroyed at exit, and its
   * failure used to read "error: sandbox 3f2a9c: sandbox 3f2a9c... was destroyed: the process that
   * owned it exited" after a ^C, as if something else had gone wrong.
   */
  static String failureLine(Throwable ex, boolean exiting) {
    if (exiting && ex instanceof SandboxClosedException) {
      return "agentnest: interrupted: the call was stopped and its sandbox destroyed";
    }
    // Messages can quote what a sandbox chose (a path, a host, a command): escaped.
    return "error: " + HumanText.text(String.valueOf(ex.getMessage()));
  }

  /**
   * A bad command line: the error, picocli's suggestions for a mistyped option or subcommand, and
   * where the full help is. Not the whole help, which scrolled the one line that matters (the
   * error, printed above it) off the screen: {@code run}'s is 70 lines.
   */
  static int usageError(CommandLine.ParameterException ex, String[] args) {
    CommandLine cmd = ex.getCommandLine();
    PrintWriter err = cmd.getErr();
    err.println("error: " + HumanText.text(String.valueOf(ex.getMessage())));
    CommandLine.UnmatchedArgumentException.printSuggestions(ex, err);
    err.println("'" + cmd.getCommandSpec().qualifiedName() + " --help' shows the usage");
    err.flush();
    return ExitCodes.USAGE;
  }

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** Version from the jar manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = AgentNestCli.class.getPackage().getImplementationVersion();
      return new String[] {"agentnest " + (v == null ? "dev" : v)};
    }
  }
}
