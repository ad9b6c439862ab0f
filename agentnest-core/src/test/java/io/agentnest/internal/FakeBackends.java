package io.agentnest.internal;

import io.agentnest.SandboxConfig;
import io.agentnest.spi.EngineFreeBackend;
import io.agentnest.spi.RuntimeBackend;

/** Engine-free backends for the tests of core's choices between fork and snapshot paths. */
final class FakeBackends {
  private FakeBackends() {}

  /** Checkpoints memory on gVisor runtimes only, as the Docker backend says. */
  static RuntimeBackend gvisorOnly() {
    return new EngineFreeBackend() {
      @Override
      public String name() {
        return "docker";
      }

      @Override
      public boolean checkpointsMemory(SandboxConfig config) {
        String r = config.runtime();
        return r != null && (r.equals("runsc") || r.equals("gvisor"));
      }

      @Override
      public void destroy(String id) {}
    };
  }

  /** Never checkpoints memory (the SPI's default). */
  static RuntimeBackend never() {
    return new EngineFreeBackend() {
      @Override
      public String name() {
        return "plain";
      }

      @Override
      public void destroy(String id) {}
    };
  }
}
