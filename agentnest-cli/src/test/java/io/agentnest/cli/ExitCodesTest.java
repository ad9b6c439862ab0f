package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.SandboxNotFoundException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
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

  @Test
  void aBadCommandLineExitsWithTheUsageCode() {
    assertThat(AgentNestCli.execute("ls", "--no-such-flag")).isEqualTo(ExitCodes.USAGE);
    assertThat(AgentNestCli.execute("no-such-command")).isEqualTo(ExitCodes.USAGE);
  }
}
