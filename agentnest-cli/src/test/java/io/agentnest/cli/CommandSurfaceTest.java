package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

class CommandSurfaceTest {
  /** Commands whose output is data a script reads: each must offer --json. */
  private static final Set<String> DATA =
      Set.of(
          "agentnest ls",
          "agentnest audit",
          "agentnest audit query",
          "agentnest audit tail",
          "agentnest audit verify",
          "agentnest bench",
          "agentnest code",
          "agentnest create",
          "agentnest exec",
          "agentnest extend",
          "agentnest logs",
          "agentnest doctor",
          "agentnest run");

  private static List<CommandSpec> all() {
    List<CommandSpec> out = new ArrayList<>();
    collect(new CommandLine(new AgentNestCli()), out);
    return out;
  }

  private static void collect(CommandLine cl, List<CommandSpec> out) {
    out.add(cl.getCommandSpec());
    cl.getSubcommands().values().forEach(sub -> collect(sub, out));
  }

  @Test
  void everyCommandHasHelp() {
    for (CommandSpec c : all()) {
      if (c.userObject() instanceof CommandLine.HelpCommand) {
        continue;
      }
      assertThat(c.findOption("--help")).as(c.qualifiedName() + " --help").isNotNull();
      assertThat(c.usageMessage().description())
          .as(c.qualifiedName() + " description")
          .isNotEmpty();
    }
  }

  /**
   * A description line laid out by hand (a table of operations, examples) is printed as written:
   * past 80 columns, picocli breaks it and the rest lands at column 0, which made {@code bench
   * --help} unreadable in an 80-column terminal.
   */
  @Test
  void everyHandLaidOutDescriptionLineFitsEightyColumns() {
    for (CommandSpec c : all()) {
      for (String line : c.usageMessage().description()) {
        if (line.startsWith(" ")) {
          assertThat(line.length())
              .as(c.qualifiedName() + " description line '" + line + "'")
              .isLessThanOrEqualTo(80);
        }
      }
    }
  }

  @Test
  void everyCommandWhoseOutputIsDataOffersJson() {
    List<String> names = all().stream().map(CommandSpec::qualifiedName).toList();
    assertThat(names).containsAll(DATA);
    for (CommandSpec c : all()) {
      if (DATA.contains(c.qualifiedName())) {
        assertThat(c.findOption("--json")).as(c.qualifiedName() + " --json").isNotNull();
      }
    }
  }

  /**
   * One prefix per kind of message on stderr: {@code error: } (the command failed), {@code warning:
   * } (it goes on), {@code agentnest: } only for notes (a limit that stopped a run, when a created
   * sandbox expires); before, errors came as either.
   */
  /** A note ("agentnest: ...") that is really an error or a warning. */
  private static final Pattern ERROR_LIKE_NOTE =
      Pattern.compile("\"agentnest: (error|warning|no |could not|cannot|can't|failed|the .* fail)");

  @Test
  void errorsAndWarningsOnStderrUseOnePrefixEach() throws IOException {
    List<String> odd = new ArrayList<>();
    try (Stream<Path> files = Files.walk(Path.of("src", "main", "java"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        List<String> lines = Files.readAllLines(f);
        for (int i = 0; i < lines.size(); i++) {
          String l = lines.get(i);
          if (ERROR_LIKE_NOTE.matcher(l).find()) {
            odd.add(f.getFileName() + ":" + (i + 1) + ": " + l.strip());
          }
        }
      }
    }
    assertThat(odd).as("messages to start with error: or warning:").isEmpty();
  }
}
