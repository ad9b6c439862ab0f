package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.ImageNotFoundException;
import io.agentnest.Limit;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxNotFoundException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class ExitCodesTest {
  @Test
  void eachKindOfFailureHasTheCodeScriptsRelyOn() {
    assertThat(ExitCodes.of(new BackendUnavailableException("down"))).isEqualTo(3);
    assertThat(ExitCodes.of(new ImageNotFoundException("no image"))).isEqualTo(4);
    assertThat(ExitCodes.of(new ConfigException("bad"))).isEqualTo(5);
    assertThat(ExitCodes.of(new SandboxNotFoundException("gone"))).isEqualTo(6);
    assertThat(ExitCodes.of(new ApprovalDeniedException("network", "example.org", "no")))
        .isEqualTo(7);
    assertThat(ExitCodes.of(new AgentNestException("failed"))).isEqualTo(1);
    assertThat(ExitCodes.of(new IllegalStateException("bug"))).isEqualTo(1);
  }

  @Test
  void theDocumentedCodesAreStableAndDistinct() throws IllegalAccessException {
    List<Integer> codes = new ArrayList<>();
    for (Field f : ExitCodes.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
        codes.add(f.getInt(null));
      }
    }
    // Changing one breaks every script that checks it: extend the list, never renumber.
    assertThat(codes).containsExactlyInAnyOrder(0, 1, 2, 3, 4, 5, 6, 7, 124);
  }

  private static ExecResult result(int exit, @Nullable ExecError error, @Nullable Limit limit) {
    return new ExecResult(
        exit, "", "", null, List.of(), error, Duration.ZERO, limit, false, false, Map.of());
  }

  @Test
  void aRunsExitCodeFollowsReadmesTableOnEveryPath() {
    assertThat(RunCommand.exitFor(result(0, null, null))).isZero();
    assertThat(RunCommand.exitFor(result(7, null, null))).isEqualTo(7);
    // A limit wins over the status of the process it stopped (a killed shell's 143).
    assertThat(RunCommand.exitFor(result(143, null, Limit.TIMEOUT))).isEqualTo(ExitCodes.LIMIT);
    assertThat(RunCommand.exitFor(result(143, null, Limit.OUTPUT))).isEqualTo(ExitCodes.LIMIT);
    assertThat(
            RunCommand.exitFor(
                result(1, new ExecError("KeyboardInterrupt", "", ""), Limit.TIMEOUT)))
        .isEqualTo(ExitCodes.LIMIT);
    // Python: sys.exit(n) is n, sys.exit() 0, sys.exit("why") 1, an exception 1.
    assertThat(RunCommand.exitFor(result(1, new ExecError("SystemExit", "3", ""), null)))
        .isEqualTo(3);
    assertThat(RunCommand.exitFor(result(1, new ExecError("SystemExit", "None", ""), null)))
        .isZero();
    assertThat(RunCommand.exitFor(result(1, new ExecError("SystemExit", "why", ""), null)))
        .isEqualTo(1);
    assertThat(RunCommand.exitFor(result(1, new ExecError("ValueError", "x", ""), null)))
        .isEqualTo(1);
    // An approval refused inside Python is 7, as in the shell.
    assertThat(
            RunCommand.exitFor(
                result(
                    1,
                    new ExecError(
                        "PermissionError",
                        "[Errno 13] agentnest: os.remove /workspace/x was denied: no",
                        ""),
                    null)))
        .isEqualTo(ExitCodes.DENIED);
  }

  @Test
  void aSandboxDestroyedOnTheWayOutReadsAsTheInterruptItWas() {
    SandboxClosedException closed =
        new SandboxClosedException(
            "sandbox 3f2a9c: sandbox 3f2a9c1b was destroyed: the process that owned it exited");
    assertThat(AgentNestCli.failureLine(closed, true))
        .isEqualTo("agentnest: interrupted: the call was stopped and its sandbox destroyed");
    assertThat(AgentNestCli.failureLine(closed, false))
        .startsWith("error: sandbox 3f2a9c: ")
        .contains("the process that owned it exited");
    assertThat(AgentNestCli.failureLine(new ConfigException("bad"), true)).isEqualTo("error: bad");
  }

  @Test
  void aBadCommandLineExitsWithTheUsageCode() {
    assertThat(AgentNestCli.execute("ls", "--no-such-flag")).isEqualTo(ExitCodes.USAGE);
    assertThat(AgentNestCli.execute("no-such-command")).isEqualTo(ExitCodes.USAGE);
  }
}
