package io.agentnest.tools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.RichOutput;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Formatting and bounding of what models read (the sandbox itself is exercised by the ITs). */
class SandboxToolsTest {
  private static final ToolLimits SMALL = new ToolLimits(1000, 100, 64, 10);

  static ExecResult result(
      int exit, String out, String err, String value, ExecError error, Limit limit) {
    return new ExecResult(
        exit,
        out,
        err,
        value,
        List.of(),
        error,
        Duration.ofMillis(5),
        limit,
        false,
        false,
        Map.of());
  }

  private static SandboxTools tools(ToolLimits limits) {
    return SandboxTools.lazy(
        () -> {
          throw new AssertionError("no sandbox in unit tests");
        },
        limits);
  }

  @Test
  void pythonResultShowsStdoutAndValue() {
    ToolOutput out =
        tools(ToolLimits.DEFAULTS).format(result(0, "hi\n", "", "42", null, null), true);
    assertThat(out.text()).isEqualTo("[stdout]\nhi\n[result]\n42\n");
    assertThat(out.isError()).isFalse();
  }

  @Test
  void shellResultShowsExitCodeAndIsAnErrorWhenNonZero() {
    ToolOutput out =
        tools(ToolLimits.DEFAULTS).format(result(2, "", "nope", null, null, null), false);
    assertThat(out.text()).isEqualTo("[exit code 2]\n[stderr]\nnope\n");
    assertThat(out.isError()).isTrue();
  }

  @Test
  void emptyOutputSaysSo() {
    ToolOutput out = tools(ToolLimits.DEFAULTS).format(result(0, "", "", null, null, null), true);
    assertThat(out.text()).isEqualTo("(no output)\n");
  }

  @Test
  void pythonErrorCarriesNameValueTraceback() {
    ExecError e = new ExecError("ValueError", "bad", "Traceback...\nValueError: bad\n");
    ToolOutput out = tools(ToolLimits.DEFAULTS).format(result(1, "", "", null, e, null), true);
    assertThat(out.text()).contains("[error] ValueError: bad", "[traceback]\nTraceback...");
    assertThat(out.isError()).isTrue();
  }

  @Test
  void limitsSayWhatHappenedAndWhatToDo() {
    ToolOutput out =
        tools(ToolLimits.DEFAULTS).format(result(0, "", "", null, null, Limit.TIMEOUT), true);
    assertThat(out.text()).contains("[limit] TIMEOUT", "shorter steps");
    assertThat(out.isError()).isTrue();
  }

  @Test
  void hugeOutputIsCutKeepingHeadAndTail() {
    String big = "A".repeat(5000) + "THE END";
    ToolOutput out = tools(SMALL).format(result(0, big, "", null, null, null), true);
    assertThat(out.text().length()).isLessThan(1300);
    assertThat(out.text()).startsWith("[stdout]\nAAA").contains("characters cut", "THE END");
  }

  @Test
  void imagesBecomeAttachmentsAndOversizedOnesAreLeftOutWithANote() {
    byte[] small = new byte[] {(byte) 0x89, 'P', 'N', 'G', 1, 2, 3};
    byte[] big = new byte[100];
    ExecResult r =
        new ExecResult(
            0,
            "",
            "",
            "<Figure>",
            List.of(
                new RichOutput("image/png", small),
                new RichOutput("image/png", big),
                new RichOutput("text/html", "<b>x</b>".getBytes(StandardCharsets.UTF_8))),
            null,
            Duration.ZERO,
            null,
            false,
            false,
            Map.of());
    ToolOutput out = tools(SMALL).format(r, true);
    assertThat(out.attachments()).hasSize(1);
    assertThat(out.attachments().get(0).kind()).isEqualTo(ToolOutput.Kind.IMAGE);
    assertThat(out.attachments().get(0).data()).isEqualTo(small);
    assertThat(out.text()).contains("an image of 100 bytes was left out", "[images] 1 image(s)");
  }

  @Test
  void redactionsAreCountedNeverShown() {
    ExecResult r =
        new ExecResult(
            0,
            "[REDACTED:KEY]",
            "",
            null,
            List.of(),
            null,
            Duration.ZERO,
            null,
            false,
            false,
            Map.of("KEY", 2));
    assertThat(tools(ToolLimits.DEFAULTS).format(r, true).text())
        .contains("2 secret value(s) were masked");
  }

  @Test
  void emptyArgumentsAreRefusedWithoutTouchingTheSandbox() {
    SandboxTools t = tools(ToolLimits.DEFAULTS);
    assertThat(t.runPython(" ", null, null).text()).contains("'code' is empty");
    assertThat(t.runShell("", null, null).isError()).isTrue();
    assertThat(t.writeFile("", "x", false).text()).contains("'path' is empty");
    assertThat(t.readFile("").isError()).isTrue();
    assertThat(t.exportArtifact(" ").isError()).isTrue();
  }

  @Test
  void mimeTypesFollowTheContentForImages() {
    assertThat(SandboxTools.mimeOf("a.png", new byte[] {(byte) 0x89, 'P', 'N', 'G'}))
        .isEqualTo("image/png");
    assertThat(SandboxTools.mimeOf("fake.png", "just text".getBytes(StandardCharsets.UTF_8)))
        .isEqualTo("text/plain");
    assertThat(SandboxTools.mimeOf("noext", new byte[] {(byte) 0xFF, (byte) 0xD8, (byte) 0xFF}))
        .isEqualTo("image/jpeg");
    assertThat(SandboxTools.mimeOf("x.bin", new byte[] {(byte) 0xC3, 0x28}))
        .isEqualTo("application/octet-stream");
    assertThat(SandboxTools.mimeOf("r.csv", "a,b".getBytes(StandardCharsets.UTF_8)))
        .isEqualTo("text/csv");
  }

  @Test
  void boundAndHeadTail() {
    assertThat(SandboxTools.bound("abcdef", 3)).isEqualTo("abc... [3 more characters cut]");
    assertThat(SandboxTools.bound(null, 3)).isEmpty();
    assertThat(SandboxTools.headTail("0123456789", 6)).startsWith("0123").endsWith("89");
  }

  @Test
  void limitsAreValidated() {
    assertThatThrownBy(() -> new ToolLimits(10, 1, 1, 1)).hasMessageContaining("maxTextChars");
    assertThat(ToolLimits.DEFAULTS.withMaxArtifactBytes(7).maxArtifactBytes()).isEqualTo(7);
  }

  @Test
  void aShellWorkdirOutsideTheWorkspaceIsRefusedBeforeAnythingRuns() {
    SandboxTools t = tools(ToolLimits.DEFAULTS);
    for (String outside : new String[] {"/etc", "/", "/workspacex", "/tmp/../workspace"}) {
      ToolOutput out = t.runShell("cat passwd", outside, null);
      assertThat(out.isError()).as(outside).isTrue();
      assertThat(out.text()).contains("is outside /workspace", "relative to /workspace");
    }
    for (String escape : new String[] {"..", "a/../../etc", "/workspace/../etc", "a\u0000b"}) {
      ToolOutput out = t.runShell("ls", escape, null);
      assertThat(out.isError()).as(escape).isTrue();
      assertThat(out.text()).contains("BAD_PATH");
    }
    assertThat(WorkspaceDir.relative("/workspace")).isEmpty();
    assertThat(WorkspaceDir.relative("/workspace/")).isEmpty();
    assertThat(WorkspaceDir.relative("/workspace/project/src")).isEqualTo("project/src");
    assertThat(WorkspaceDir.relative("project/./src/")).isEqualTo("project/src");
  }
}
