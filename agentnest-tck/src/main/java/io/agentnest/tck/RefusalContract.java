package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Fail closed: a backend that cannot enforce a requested control refuses to create the sandbox,
 * names the control, and leaves nothing behind.
 */
public interface RefusalContract extends BackendTarget {

  private SandboxSpec hardened() {
    return SandboxSpec.builder()
        .image(target().config().image())
        .runtime(target().config().runtime())
        .command("python3", "-c", "pass")
        .workdir("/workspace")
        .labels(Map.of(Labels.MANAGED, "true", "agentnest-tck", "refusal"))
        .cpus(1.0)
        .memoryBytes(256L << 20)
        .pidsLimit(64)
        .seccompProfileJson("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}")
        .openFilesLimit(1024)
        .build();
  }

  @Test
  default void aSpecWithoutAHardeningControlIsRefusedNamingIt() {
    SandboxSpec base = hardened();
    Map<String, SandboxSpec> weakened =
        Map.of(
            "network",
            base.toBuilder().networkDisabled(false).build(),
            "capabilities",
            base.toBuilder().dropAllCapabilities(false).build(),
            "no-new-privileges",
            base.toBuilder().noNewPrivileges(false).build());
    for (Map.Entry<String, SandboxSpec> w : weakened.entrySet()) {
      assertThatThrownBy(() -> target().backend().create(w.getValue()))
          .as("a spec without %s", w.getKey())
          .isInstanceOf(UnsupportedControlException.class)
          .hasMessageContaining(w.getKey());
    }
    assertThat(target().backend().list())
        .extracting(SandboxInfo::labels)
        .noneMatch(l -> "refusal".equals(l.get("agentnest-tck")));
  }

  @Test
  default void anUnknownRuntimeIsRefusedNamingIt() {
    assertThatThrownBy(
            () -> Sandbox.create(target().configure().runtime("no-such-runtime-tck").build()))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("no-such-runtime-tck");
  }
}
