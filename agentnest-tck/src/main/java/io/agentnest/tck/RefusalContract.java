package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Fail closed: a backend that cannot enforce a requested control refuses to create the sandbox,
 * names the control, and leaves nothing behind.
 */
public interface RefusalContract extends BackendTarget {

  private SandboxSpec hardened() {
    return new SandboxSpec(
        target().config().image(),
        target().config().runtime(),
        List.of("python3", "-c", "pass"),
        "65534:65534",
        Map.of(),
        "/workspace",
        Map.of(Labels.MANAGED, "true", "agentnest-tck", "refusal"),
        1.0,
        256L << 20,
        64,
        Map.of(),
        true,
        "{\"defaultAction\":\"SCMP_ACT_ALLOW\"}",
        true,
        true,
        true,
        1024);
  }

  @Test
  default void aSpecWithoutAHardeningControlIsRefusedNamingIt() {
    SandboxSpec base = hardened();
    Map<String, SandboxSpec> weakened =
        Map.of(
            "network",
            copy(base, false, true, true),
            "capabilities",
            copy(base, true, false, true),
            "no-new-privileges",
            copy(base, true, true, false));
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

  private static SandboxSpec copy(
      SandboxSpec s, boolean networkDisabled, boolean dropAllCapabilities, boolean noNewPrivs) {
    return new SandboxSpec(
        s.image(),
        s.runtime(),
        s.command(),
        s.user(),
        s.env(),
        s.workdir(),
        s.labels(),
        s.cpus(),
        s.memoryBytes(),
        s.pidsLimit(),
        s.tmpfs(),
        s.readOnlyRootFilesystem(),
        s.seccompProfileJson(),
        noNewPrivs,
        dropAllCapabilities,
        networkDisabled,
        s.openFilesLimit());
  }
}
