package io.agentnest.cli;

import io.agentnest.config.AgentNestConfig;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Configuration file commands. */
@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = {
      "Works with the AgentNest configuration file, agentnest.yaml: version 1, defaults and named"
          + " profiles. Every key, with its default and meaning:",
      "  docs/agentnest.sample.yaml",
      "Looked for as ./agentnest.yaml, then $XDG_CONFIG_HOME/agentnest/agentnest.yaml (default"
          + " ~/.config/agentnest/agentnest.yaml); $AGENTNEST_CONFIG names a file instead."
    },
    subcommands = {ConfigCommand.Check.class})
final class ConfigCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(
      name = "check",
      mixinStandardHelpOptions = true,
      description = {
        "Validates a configuration file and prints the effective configuration: the defaults"
            + " overlaid with the profile and the AGENTNEST_* environment overrides, each value"
            + " commented with where it came from. Exits 0 when valid; otherwise prints"
            + " 'error: FILE:LINE:COLUMN: KEY: problem' and exits 5.",
        "  agentnest config check",
        "  agentnest config check agentnest.yaml --profile data",
        "  agentnest config check --json"
      })
  static final class Check implements Callable<Integer> {
    @Parameters(
        arity = "0..1",
        paramLabel = "FILE",
        description = "The file to check (default: the one discovery finds, if any).")
    @Nullable Path file;

    @Option(
        names = "--profile",
        paramLabel = "NAME",
        description = "Profile to print (default: $AGENTNEST_PROFILE, else the defaults).")
    @Nullable String profile;

    @Option(names = "--json", description = "Print the effective configuration as JSON.")
    boolean json;

    @Override
    public Integer call() {
      AgentNestConfig config = file != null ? AgentNestConfig.load(file) : AgentNestConfig.load();
      if (json) {
        System.out.println(config.effectiveJson(profile));
        return ExitCodes.OK;
      }
      String profiles =
          config.profiles().isEmpty()
              ? "no profiles"
              : "profiles: " + String.join(", ", config.profiles());
      System.out.println(
          config.source().isPresent()
              ? "# valid: " + config.sourceName() + " (" + profiles + ")"
              : "# no config file found: using the built-in defaults");
      System.out.print(config.effectiveYaml(profile));
      System.out.flush();
      return ExitCodes.OK;
    }
  }
}
