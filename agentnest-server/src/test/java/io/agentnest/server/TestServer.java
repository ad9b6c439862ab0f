package io.agentnest.server;

import java.nio.file.Path;
import java.time.Clock;

/**
 * A server on loopback (an ephemeral port) over a fresh tenant store in {@code dir}, as the ITs
 * start it; closing it destroys every sandbox it made, then stops it.
 */
record TestServer(TenantStore store, AgentNestServer server, int port) implements AutoCloseable {
  static TestServer start(Path dir, ServerConfig config) {
    TenantStore store = TenantStore.open(dir.resolve("tenants.db"), Clock.systemUTC());
    AgentNestServer server = new AgentNestServer(config, store);
    return new TestServer(store, server, server.start());
  }

  /** Adds {@code tenant} and returns its first API key. */
  String key(Tenant tenant) {
    return store.add(tenant, null);
  }

  Http http() {
    return new Http(port);
  }

  @Override
  public void close() {
    try {
      server.destroyAll();
      server.close();
    } finally {
      store.close();
    }
  }
}
