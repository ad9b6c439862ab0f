package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SecretOptionsTest {
  static final String VALUE = "hunter2-correct-horse";

  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private SandboxConfig apply(SecretOptions o, boolean stdinFree, boolean terminal, String stdin) {
    InputStream in = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
    return o.applyTo(
        SandboxConfig.builder().build(),
        stdinFree,
        terminal,
        in,
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  private static SecretOptions with(List<String> secret, List<String> files) {
    SecretOptions o = new SecretOptions();
    o.secrets.addAll(secret);
    o.secretFiles.addAll(files);
    return o;
  }

  @Test
  void aValueOnTheCommandLineIsRefusedWithoutATerminalAndTheMessageNamesTheSafeForms() {
    SecretOptions o = with(List.of("DB_PASSWORD=" + VALUE), List.of());
    assertThatThrownBy(() -> apply(o, true, false, ""))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("process list")
        .hasMessageContaining("--secret-env DB_PASSWORD")
        .hasMessageContaining("--secret-file DB_PASSWORD=FILE")
        .message()
        .doesNotContain(VALUE);
  }

  @Test
  void aValueOnTheCommandLineAtATerminalIsUsedWithAWarning() {
    SandboxConfig c = apply(with(List.of("DB_PASSWORD=" + VALUE), List.of()), true, true, "");
    assertThat(c.secretEnv().get("DB_PASSWORD").reveal()).isEqualTo(VALUE);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("warning", "process list", "--secret-env DB_PASSWORD")
        .doesNotContain(VALUE);
  }

  @Test
  void aSecretFileGivesItsContentWithoutTheTrailingNewline(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("pw");
    Files.writeString(f, VALUE + "\r\n");
    SandboxConfig c = apply(with(List.of(), List.of("DB_PASSWORD=" + f)), true, false, "");
    assertThat(c.secretEnv().get("DB_PASSWORD").reveal()).isEqualTo(VALUE);
    assertThat(err.size()).isZero();
  }

  @Test
  void stdinGivesOneSecretUnlessItCarriesTheProtocol() {
    SandboxConfig c = apply(with(List.of(), List.of("TOKEN=-")), true, false, VALUE + "\n");
    assertThat(c.secretEnv().get("TOKEN").reveal()).isEqualTo(VALUE);
    assertThatThrownBy(() -> apply(with(List.of(), List.of("TOKEN=-")), false, false, VALUE))
        .hasMessageContaining("stdin carries the MCP protocol");
    assertThatThrownBy(() -> apply(with(List.of(), List.of("A=-", "B=-")), true, false, VALUE))
        .hasMessageContaining("one secret only");
  }

  @Test
  void badFormsAndMissingFilesGetClearErrors(@TempDir Path dir) {
    assertThatThrownBy(() -> apply(with(List.of(), List.of("NOEQUALS")), true, false, ""))
        .hasMessageContaining("must be NAME=FILE");
    assertThatThrownBy(
            () -> apply(with(List.of(), List.of("X=" + dir.resolve("none"))), true, false, ""))
        .hasMessageContaining("cannot read the file");
    assertThatThrownBy(() -> apply(with(List.of(), List.of("X=-")), true, false, "ab\n"))
        .hasMessageContaining("--secret-file X=-")
        .hasMessageContaining("at least 4 characters");
  }
}
