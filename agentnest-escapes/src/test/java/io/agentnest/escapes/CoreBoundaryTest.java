package io.agentnest.escapes;

import io.agentnest.arch.ModuleBoundary;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** This module's main code reaches agentnest-core only through its public API and SPI. */
class CoreBoundaryTest {
  /**
   * Internal classes this module used before the boundary was enforced; move each to an API or SPI
   * type (or use an existing one) and delete it here. Nothing may be added.
   */
  private static final Set<String> STILL_ALLOWED =
      Set.of(
          "io.agentnest.internal.DefaultSandbox",
          "io.agentnest.internal.state.SandboxArchives",
          "io.agentnest.internal.support.Json");

  @Test
  void mainCodeUsesOnlyTheCoreApiAndSpi() {
    ModuleBoundary.check("io.agentnest.escapes", STILL_ALLOWED);
  }

  @Test
  void everyRemainingAllowanceIsStillNeeded() {
    ModuleBoundary.checkAllowancesAreStillNeeded("io.agentnest.escapes", STILL_ALLOWED);
  }
}
