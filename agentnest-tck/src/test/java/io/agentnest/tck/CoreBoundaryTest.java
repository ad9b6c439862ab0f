package io.agentnest.tck;

import io.agentnest.arch.ModuleBoundary;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** This module's main code reaches agentnest-core only through its public API and SPI. */
class CoreBoundaryTest {
  private static final Set<String> STILL_ALLOWED = Set.of();

  @Test
  void mainCodeUsesOnlyTheCoreApiAndSpi() {
    ModuleBoundary.check("io.agentnest.tck", STILL_ALLOWED);
  }

  @Test
  void everyRemainingAllowanceIsStillNeeded() {
    ModuleBoundary.checkAllowancesAreStillNeeded("io.agentnest.tck", STILL_ALLOWED);
  }
}
