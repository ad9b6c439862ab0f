package io.agentnest.spi;

import io.agentnest.SandboxInfo;
import java.util.List;
import java.util.Optional;

/**
 * A backend for unit tests of what sits above the SPI: it has no engine, so it creates and attaches
 * to nothing and lists no sandbox; a test overrides what it watches (destroy, relabel, resources).
 */
public abstract class EngineFreeBackend implements RuntimeBackend {
  @Override
  public BackendSandbox create(SandboxSpec spec) {
    throw new UnsupportedOperationException(name() + " has no engine to create a sandbox in");
  }

  @Override
  public BackendSandbox attach(String id) {
    throw new UnsupportedOperationException(name() + " has no engine to attach to");
  }

  @Override
  public List<SandboxInfo> list() {
    return List.of();
  }

  @Override
  public Optional<SandboxInfo> inspect(String id) {
    return Optional.empty();
  }
}
