package io.agentnest.server;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Path;
import java.time.Clock;

/**
 * A server on loopback (an ephemeral port) over a fresh tenant store in {@code dir}, as the ITs
 * start it; closing it destroys every sandbox it made, then stops it.
 */
public record TestServer(TenantStore store, AgentNestServer server, int port)
    implements AutoCloseable {
  public static TestServer start(Path dir, ServerConfig config) {
    TenantStore store = TenantStore.open(dir.resolve("tenants.db"), Clock.systemUTC());
    AgentNestServer server = new AgentNestServer(config, store);
    return new TestServer(store, server, server.start());
  }

  /** A server with the ITs' usual bounds (64 KiB JSON, 1 MiB bodies) and the default policy. */
  static TestServer loopback(Path dir) {
    return start(
        dir,
        ServerConfig.parse(
            "listen: {host: 127.0.0.1, port: 0}\nmax_json: 64k\nmax_body: 1m\n", "test"));
  }

  /** Adds {@code tenant} and returns its first API key. */
  public String key(Tenant tenant) {
    return store.add(tenant, null);
  }

  public Http http() {
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
