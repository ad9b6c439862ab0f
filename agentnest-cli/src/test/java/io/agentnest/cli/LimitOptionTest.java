package io.agentnest.cli;

import static io.agentnest.cli.BackendOptionsTest.parse;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --limit NAME=VALUE}: every limit by the name agentnest.yaml gives it. */
class LimitOptionTest {

  @Test
  void limitsAreSetByTheirNamesWithSizesAsPeopleWriteThem() {
    SandboxConfig c =
        parse(
                new RunCommand(),
                "--limit",
                "open_files=1024",
                "--limit",
                "tmp_size=128m",
                "--limit",
                "pids=99")
            .sandbox
            .toConfig();

    assertThat(c.limit(SandboxLimit.OPEN_FILES)).isEqualTo(1024);
    assertThat(c.tmpSizeBytes()).isEqualTo(128L << 20);
    assertThat(c.pidsLimit()).isEqualTo(99);
  }

  @Test
  void aWrongLimitIsAConfigErrorNamingTheFix() {
    assertThatThrownBy(() -> parse(new RunCommand(), "--limit", "open_file=3").sandbox.toConfig())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("unknown limit 'open_file'")
        .hasMessageContaining("open_files");
    assertThatThrownBy(() -> parse(new RunCommand(), "--limit", "open_files").sandbox.toConfig())
        .hasMessageContaining("is not NAME=VALUE");
    assertThatThrownBy(
            () -> parse(new RunCommand(), "--limit", "open_files=lots").sandbox.toConfig())
        .hasMessageContaining("limits.open_files 'lots' is not a whole number");
    assertThatThrownBy(() -> parse(new RunCommand(), "--limit", "open_files=8").sandbox.toConfig())
        .hasMessageContaining("limits.open_files must be at least 64");
  }

  @Test
  void theHelpListsEveryLimitFromTheTable() {
    String help = new CommandLine(new RunCommand()).getUsageMessage();

    assertThat(help).contains("--limit=NAME=VALUE");
    Arrays.stream(SandboxLimit.values()).forEach(l -> assertThat(help).contains(l.key()));
  }
}
