package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.server.AgentNestServer;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import org.jspecify.annotations.Nullable;

/**
 * An {@code agentnest serve} inside the bench's process, for the benches that measure the server:
 * an ephemeral loopback port, a temporary AGENTNEST_HOME (restored and deleted at close) and one
 * tenant whose quotas are far above the load, so the bench measures the server, not its refusals.
 * Closing destroys every sandbox the server made.
 */
final class BenchServer implements AutoCloseable {
  final URI url;
  final String key;
  private final @Nullable String homeBefore;
  private final Path home;
  private final TenantStore store;
  private final AgentNestServer server;

  BenchServer(int maxSandboxes) {
    homeBefore = System.getProperty("agentnest.home");
    try {
      home = Files.createTempDirectory("agentnest-server-bench-");
    } catch (IOException ex) {
      throw new AgentNestException("cannot create a temporary directory: " + ex.getMessage(), ex);
    }
    System.setProperty("agentnest.home", home.toString());
    store = TenantStore.open(home.resolve(TenantStore.FILE), Clock.systemUTC());
    key =
        store.add(
            new Tenant("bench", maxSandboxes, 256L << 30, 256, 1_000_000, null, null, 0), null);
    server = new AgentNestServer(ServerConfig.defaults().withListen("127.0.0.1", 0), store);
    url = URI.create("http://127.0.0.1:" + server.start());
  }

  @Override
  public void close() {
    try {
      server.destroyAll();
      server.close();
      store.close();
    } finally {
      if (homeBefore == null) {
        System.clearProperty("agentnest.home");
      } else {
        System.setProperty("agentnest.home", homeBefore);
      }
      try {
        HostFiles.deleteTree(home);
      } catch (IOException ignored) {
        // a temporary directory
      }
    }
  }
}
