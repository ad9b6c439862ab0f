package io.agentnest.kubernetes;

import io.agentnest.arch.ModuleBoundary;
import org.junit.jupiter.api.Test;

/** This module's main code reaches agentnest-core only through its public API and SPI. */
class CoreBoundaryTest {
  @Test
  void mainCodeUsesOnlyTheCoreApiAndSpi() {
    ModuleBoundary.check("io.agentnest.kubernetes");
  }
}
