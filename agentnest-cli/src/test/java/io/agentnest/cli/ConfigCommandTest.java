package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code agentnest config check} in-process (no Docker needed). */
class ConfigCommandTest {
  record Run(int exit, String out, String err) {}

  static Run cli(String... args) {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit;
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      exit = AgentNestCli.execute(args);
    } finally {
      System.out.flush();
      System.err.flush();
      System.setOut(oldOut);
      System.setErr(oldErr);
    }
    return new Run(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  static final String VALID =
      """
      version: 1
      defaults:
        image: example/python:1
        limits: {memory: 1g}
      profiles:
        data:
          limits: {memory: 4g}
      """;

  @Test
  void validFilePrintsTheEffectiveConfigAndExitsZero(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("agentnest.yaml");
    Files.writeString(file, VALID);

    Run r = cli("config", "check", file.toString());

    assertThat(r.exit()).as(r.err()).isEqualTo(ExitCodes.OK);
    assertThat(r.out())
        .startsWith("# valid: " + file + " (profiles: data)\n")
        .contains("version: 1\ndefaults:\n")
        .contains("  image: example/python:1  # defaults.image (line 3)\n")
        .contains("    memory: 1g  # defaults.limits.memory (line 4)\n");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void profileAndJson(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("agentnest.yaml");
    Files.writeString(file, VALID);

    Run yaml = cli("config", "check", file.toString(), "--profile", "data");
    assertThat(yaml.exit()).as(yaml.err()).isZero();
    assertThat(yaml.out())
        .contains("# profile: data\n")
        .contains("    memory: 4g  # profiles.data");

    Run json = cli("config", "check", file.toString(), "--profile", "data", "--json");
    assertThat(json.exit()).as(json.err()).isZero();
    assertThat(json.out()).startsWith("{").contains("\"memory\" : \"4g\"");
  }

  @Test
  void invalidFilePrintsTheErrorWithItsLocationAndExitsFive(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("agentnest.yaml");
    Files.writeString(file, "version: 1\ndefaults:\n  limits:\n    memroy: 1g\n");

    Run r = cli("config", "check", file.toString());

    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err())
        .isEqualTo(
            "error: "
                + file
                + ":4:5: defaults.limits.memroy: unknown key; did you mean 'memory'?"
                + System.lineSeparator());
    assertThat(r.out()).isEmpty();
  }

  @Test
  void unknownProfileAndMissingFileExitFive(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("agentnest.yaml");
    Files.writeString(file, VALID);

    Run profile = cli("config", "check", file.toString(), "--profile", "dat");
    assertThat(profile.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(profile.err()).contains("unknown profile 'dat'; did you mean 'data'?");

    Run missing = cli("config", "check", dir.resolve("nope.yaml").toString());
    assertThat(missing.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(missing.err()).contains("nope.yaml: config file does not exist");
  }

  @Test
  void helpDescribesTheCommand() {
    Run r = cli("config", "check", "--help");
    assertThat(r.exit()).isZero();
    assertThat(r.out()).contains("--profile=NAME", "--json", "FILE", "exits 5");
  }
}
