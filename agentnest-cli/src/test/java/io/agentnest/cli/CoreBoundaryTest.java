package io.agentnest.cli;

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
          "io.agentnest.internal.audit.Audit",
          "io.agentnest.internal.lifecycle.Pruner",
          "io.agentnest.internal.redact.RedactingStream",
          "io.agentnest.internal.redact.Redactor",
          "io.agentnest.internal.support.HostFiles",
          "io.agentnest.internal.support.HumanText",
          "io.agentnest.internal.support.Json",
          "io.agentnest.internal.support.Percentiles",
          "io.agentnest.internal.support.TerminalFilter");

  @Test
  void mainCodeUsesOnlyTheCoreApiAndSpi() {
    ModuleBoundary.check("io.agentnest.cli", STILL_ALLOWED);
  }

  @Test
  void everyRemainingAllowanceIsStillNeeded() {
    ModuleBoundary.checkAllowancesAreStillNeeded("io.agentnest.cli", STILL_ALLOWED);
  }
}
