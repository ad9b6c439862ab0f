package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.config.StoreConfig;
import io.agentnest.server.store.PostgresTenantStore;
import io.agentnest.server.tenancy.TenantStore;
import io.agentnest.spi.support.AgentNestHome;
import java.nio.file.Path;
import java.time.Clock;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * Which tenant store {@code agentnest tenant} changes: the server's server.yaml names it (its
 * {@code store.postgres} database, shared by every server of a deployment), else the SQLite file
 * under AGENTNEST_HOME.
 */
final class TenantStoreOption {
  @Option(
      names = "--config",
      paramLabel = "FILE",
      description =
          "The server's server.yaml: its store (store.postgres) is the one changed (default:"
              + " SQLite under AGENTNEST_HOME).")
  @Nullable Path config;

  TenantStore open() {
    try {
      StoreConfig.Postgres pg =
          config == null ? null : ServerConfig.load(config).store().postgres();
      return pg == null
          ? TenantStore.open(AgentNestHome.dir().resolve(TenantStore.FILE), Clock.systemUTC())
          : PostgresTenantStore.open(pg, System.getenv(), Clock.systemUTC());
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
  }
}
