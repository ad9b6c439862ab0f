package io.agentnest.arch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Core's packages have a direction: none imports another that imports it back, directly or around
 * (values and {@code Sandbox} at the bottom, the SPI above them, then its support, the
 * configuration and the audit; inside {@code internal} the facade above its parts). Nested packages
 * count as their own ({@code internal.egress} is not {@code internal}).
 */
class PackageCyclesTest {
  @Test
  void noPackageOfCoreImportsOneThatImportsItBack() {
    assertThat(PackageCycles.of(ModuleBoundary.mainClassesOf("io.agentnest"), "io.agentnest"))
        .as(
            "package circles: give the dependency a direction (move the shared type down, or"
                + " invert it behind an interface of the lower package)")
        .isEmpty();
  }

  @Test
  void aCircleAroundThreePackagesIsFoundAndOneWayImportsAreNot() {
    Map<String, Set<String>> graph =
        Map.of(
            "io.agentnest", Set.of(),
            "io.agentnest.spi", Set.of("io.agentnest", "io.agentnest.config"),
            "io.agentnest.config", Set.of("io.agentnest.audit"),
            "io.agentnest.audit", Set.of("io.agentnest.spi", "io.agentnest"),
            "io.agentnest.internal", Set.of("io.agentnest.spi", "io.agentnest"));
    assertThat(PackageCycles.cycles(graph, "io.agentnest")).containsExactly("audit config spi");
  }
}
