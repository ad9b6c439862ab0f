package io.agentnest.server.store;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.config.StoreConfig;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;

/** Opens the store server.yaml names: PostgreSQL under {@code store.postgres}, else SQLite. */
public final class Stores {
  private Stores() {}

  /**
   * The store of {@code config}: its PostgreSQL database (password from {@code env}), or the SQLite
   * file under {@code home}.
   *
   * @throws IllegalArgumentException naming what to fix when the database cannot be used
   */
  public static TenantStore open(
      ServerConfig config, Path home, Map<String, String> env, Clock clock) {
    StoreConfig.Postgres pg = config.store().postgres();
    return pg == null
        ? TenantStore.open(home.resolve(TenantStore.FILE), clock)
        : PostgresTenantStore.open(pg, env, clock);
  }
}
