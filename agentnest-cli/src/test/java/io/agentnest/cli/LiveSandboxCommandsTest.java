package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code create}, {@code exec}, {@code code}, {@code extend} and {@code logs} refuse before
 * they reach a backend: each with the exit code of README's table and a message that names the fix.
 */
class LiveSandboxCommandsTest {
  /** Exit code and stderr of one in-process CLI call. */
  record Result(int exit, String err) {}

  private static Result cli(String... args) {
    PrintStream before = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      int exit = AgentNestCli.execute(args);
      return new Result(exit, err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setErr(before);
    }
  }

  @Test
  void createRefusesAnAllowlistWhoseProxyWouldDieWithTheCommand() {
    Result r = cli("create", "--allow", "pypi.example.com");
    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err()).contains("pypi.example.com", "egress proxy", "agentnest run --allow");
  }

  @Test
  void createRefusesApprovalFlagsAndNamesTheCommandsTheyBelongTo() {
    Result r = cli("create", "--guard");
    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err()).contains("'agentnest exec', 'code' or 'shell'");
  }

  @Test
  void createRejectsATtlThatIsNotADuration() {
    Result r = cli("create", "--ttl", "forever");
    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err()).contains("--ttl 'forever' is not a duration", "1d");
  }

  @Test
  void execWithoutACommandIsAUsageErrorShowingTheForm() {
    Result r = cli("exec", "3f2a9c");
    assertThat(r.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(r.err()).contains("nothing to run", "agentnest exec 3f2a9c -- ls -la");
  }

  @Test
  void codeWithoutCodeIsAUsageErrorNamingTheThreeForms() {
    Result r = cli("code", "3f2a9c");
    assertThat(r.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(r.err()).contains("-c CODE", "-f FILE", "-f -");
  }

  @Test
  void extendTakesTheOneDurationSyntaxAndRejectsOthers() {
    Result r = cli("extend", "3f2a9c", "an hour");
    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err()).contains("DURATION 'an hour' is not a duration");
    assertThat(cli("extend", "3f2a9c").exit()).isEqualTo(ExitCodes.USAGE);
  }

  @Test
  void logsOfASandboxWithNoRecordsSaysWhereToLook(@TempDir Path dir) {
    Result r = cli("logs", "0123456789ab", "--dir", dir.toString());
    assertThat(r.exit()).isEqualTo(ExitCodes.NOT_FOUND);
    assertThat(r.err()).contains("no audit records for sandbox 0123456789ab", "agentnest ls");
    Result bad = cli("logs", "../etc", "--dir", dir.toString());
    assertThat(bad.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(bad.err()).contains("is not a sandbox id");
  }

  @Test
  void aMistypedOptionIsOneErrorWithTheSuggestionNotTheWholeHelp() {
    Result r = cli("run", "--memroy", "1g", "-c", "print(1)");
    assertThat(r.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(r.err())
        .startsWith("error: Unknown option: '--memroy'")
        .contains("--memory", "'agentnest run --help' shows the usage")
        .doesNotContain("--read-only-workspace");
    Result sub = cli("craete");
    assertThat(sub.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(sub.err()).contains("craete", "create", "'agentnest --help' shows the usage");
  }

  @Test
  void theLineAboutOtherHomesAgreesWithItsCount() {
    assertThat(HomeScope.leftOut(3, 3)).isNull();
    assertThat(HomeScope.leftOut(2, 1))
        .startsWith("1 more managed sandbox on this engine belongs ");
    assertThat(HomeScope.leftOut(3, 1))
        .startsWith("2 more managed sandboxes on this engine belong ");
  }

  @Test
  void shellWithoutATerminalIsAUsageErrorPointingAtExec() {
    Result r = cli("shell", "3f2a9c");
    assertThat(r.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(r.err()).contains("needs a terminal", "agentnest exec 3f2a9c");
  }
}
