package io.agentnest.kubernetes;

import io.agentnest.arch.ModuleBoundary;
import org.junit.jupiter.api.Test;

/** This module's main code reaches agentnest-core only through its public API and SPI. */
class CoreBoundaryTest {
  @Test
  void mainCodeUsesOnlyTheCoreApiAndSpi() {
    // The backend's public exception for a full quota is thrown by its internal error mapping:
    // the circle to untie (issue 44) by moving the exception below both.
    ModuleBoundary.check("io.agentnest.kubernetes", "(api) internal");
  }
}
