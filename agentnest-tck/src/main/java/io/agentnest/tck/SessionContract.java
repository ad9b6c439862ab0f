package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.PythonSession;
import io.agentnest.Sandbox;
import org.junit.jupiter.api.Test;

/** Persistent Python sessions: state, results, errors, named sessions. */
public interface SessionContract extends BackendTarget {

  @Test
  default void variablesAndImportsPersistAcrossCalls(@Shared Sandbox sb) {
    sb.runCode("import math\nsession_contract_a = 10");
    ExecResult r = sb.runCode("print(session_contract_a * 2)\nmath.floor(2.5)");
    assertThat(r.stdout()).isEqualTo("20\n");
    assertThat(r.result()).isEqualTo("2");
  }

  @Test
  default void anExceptionIsAResultWithItsTraceback(@Shared Sandbox sb) {
    ExecResult r = sb.runCode("def session_contract_f():\n    1 / 0\nsession_contract_f()");
    ExecError error = r.error();
    assertThat(error).isNotNull();
    assertThat(error.name()).isEqualTo("ZeroDivisionError");
    assertThat(error.traceback()).contains("session_contract_f");
    assertThat(sb.runCode("'still here'").result()).isEqualTo("'still here'");
  }

  @Test
  default void stderrOfPythonIsCapturedApart(@Shared Sandbox sb) {
    ExecResult r = sb.runCode("import sys\nprint('o')\nsys.stderr.write('e\\n')\nNone");
    assertThat(r.stdout()).isEqualTo("o\n");
    assertThat(r.stderr()).isEqualTo("e\n");
  }

  @Test
  default void namedSessionsDoNotShareVariables(@Shared Sandbox sb) {
    PythonSession one = sb.pythonSession("contract-one");
    PythonSession two = sb.pythonSession("contract-two");
    one.run("x = 'one'");
    two.run("x = 'two'");
    assertThat(one.run("x").result()).isEqualTo("'one'");
    assertThat(two.run("x").result()).isEqualTo("'two'");
    assertThat(sb.runCode("'x' in globals()").result()).isEqualTo("False");
  }
}
