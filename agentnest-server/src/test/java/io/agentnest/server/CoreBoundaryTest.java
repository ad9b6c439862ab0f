package io.agentnest.server;

import io.agentnest.arch.ModuleBoundary;
import org.junit.jupiter.api.Test;

class CoreBoundaryTest {
  @Test
  void usesOnlyCoresPublicApiAndSpi() {
    ModuleBoundary.check("io.agentnest.server");
  }
}
