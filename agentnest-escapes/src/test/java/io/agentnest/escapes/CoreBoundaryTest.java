package io.agentnest.escapes;

import io.agentnest.arch.ModuleBoundary;
import org.junit.jupiter.api.Test;

/** This module's main code reaches agentnest-core only through its public API and SPI. */
class CoreBoundaryTest {
  @Test
  void mainCodeUsesOnlyTheCoreApiAndSpi() {
    // The suite's entry point shares its package with the values the probes report, which the
    // probes (internal) use: the circle to untie (issue 44) by moving the values down.
    ModuleBoundary.check("io.agentnest.escapes", "(api) internal");
  }
}
