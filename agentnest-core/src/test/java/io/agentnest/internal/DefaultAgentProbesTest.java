package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Sandbox;
import io.agentnest.spi.AgentProbes;
import java.io.ByteArrayInputStream;
import java.lang.reflect.Proxy;
import org.junit.jupiter.api.Test;

class DefaultAgentProbesTest {
  /** A Sandbox of some other implementation: every call fails, none should be made. */
  private static Sandbox foreignSandbox() {
    return (Sandbox)
        Proxy.newProxyInstance(
            Sandbox.class.getClassLoader(),
            new Class<?>[] {Sandbox.class},
            (proxy, method, args) -> {
              if (method.getName().equals("toString")) {
                return "foreign sandbox";
              }
              throw new AssertionError("the probe seam called " + method.getName());
            });
  }

  @Test
  void theCoreJarRegistersItsProbes() {
    assertThat(AgentProbes.load()).isInstanceOf(DefaultAgentProbes.class);
  }

  @Test
  void aSandboxOfAnotherImplementationIsNotSupported() {
    assertThat(AgentProbes.load().supports(foreignSandbox())).isFalse();
  }

  @Test
  void unpackingIntoAnotherImplementationIsRefusedNamingIt() {
    Sandbox foreign = foreignSandbox();
    assertThatThrownBy(
            () ->
                AgentProbes.load()
                    .unpackUnchecked(foreign, "slip", new ByteArrayInputStream(new byte[0]), 1024))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a sandbox of agentnest-core")
        .hasMessageContaining("only those have an agent to probe");
  }
}
