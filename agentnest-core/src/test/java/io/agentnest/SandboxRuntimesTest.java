package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.internal.DefaultSandboxRuntime;
import java.util.List;
import org.junit.jupiter.api.Test;

class SandboxRuntimesTest {
  @Test
  void theCoreJarRegistersItsRuntimeForTheStatics() {
    assertThat(SandboxRuntimes.get()).isInstanceOf(DefaultSandboxRuntime.class);
  }

  @Test
  void noRuntimeOnTheClassPathIsAnErrorNamingTheFix() {
    assertThatThrownBy(() -> SandboxRuntimes.find(List.of()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no io.agentnest.SandboxRuntime")
        .hasMessageContaining("agentnest-core");
  }

  @Test
  void twoRuntimesAreRefusedRatherThanPickedAtRandom() {
    SandboxRuntime a = new DefaultSandboxRuntime();
    SandboxRuntime b = new DefaultSandboxRuntime();
    assertThatThrownBy(() -> SandboxRuntimes.find(List.of(a, b)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("more than one")
        .hasMessageContaining("keep only");
  }

  @Test
  void theSingleRuntimeIsTheOneUsed() {
    SandboxRuntime only = new DefaultSandboxRuntime();
    assertThat(SandboxRuntimes.find(List.of(only))).isSameAs(only);
  }
}
