package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The demo's lines: every value starts in its column, whatever the label's length. */
class DemoCommandTest {
  private static final String COLUMN = " ".repeat(3 + 28 + 1);

  @Test
  void aShortLabelHasItsValueOnTheSameLine() {
    assertThat(DemoCommand.row("user", "uid=65534\n"))
        .isEqualTo("   user" + " ".repeat(28 - 4) + " uid=65534" + System.lineSeparator());
  }

  @Test
  void aWideLabelWithAOneLineValueKeepsItOnItsLine() {
    assertThat(DemoCommand.row("wrote data/in.csv; mean score", "87.5"))
        .isEqualTo("   wrote data/in.csv; mean score 87.5" + System.lineSeparator());
  }

  @Test
  void aLabelWiderThanTheColumnPutsAValueOfSeveralLinesBelowIt() {
    String row = DemoCommand.row("$ uname -sr; ls -la /workspace", "Linux 6.1\ntotal 4\n");
    assertThat(row.split("\n"))
        .containsExactly(
            "   $ uname -sr; ls -la /workspace", COLUMN + "Linux 6.1", COLUMN + "total 4");
  }
}
