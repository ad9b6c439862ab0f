package io.agentnest.server.store;

import io.agentnest.server.approvals.ApprovalBoard;
import io.agentnest.server.approvals.LocalApprovalBoard;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.config.StoreConfig;
import io.agentnest.server.tenancy.TenantStore;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;

/**
 * What a server keeps beyond its own process: tenants, keys and quota use ({@link #tenants}), the
 * approvals queue ({@link #approvals}), the web console's sessions ({@link #sessions}) and the E2B
 * face's tokens and metadata of running sandboxes ({@link #e2b}). In SQLite and memory for one
 * machine; in PostgreSQL for servers that share them ({@code store.postgres} in server.yaml).
 */
public record SharedStore(
    TenantStore tenants, ApprovalBoard approvals, SessionBook sessions, E2bRecords e2b)
    implements AutoCloseable {
  /** One server's: {@code tenants}, and its approvals, console sessions and E2B state in memory. */
  public static SharedStore local(TenantStore tenants) {
    return new SharedStore(
        tenants, new LocalApprovalBoard(), new MemorySessionBook(), E2bRecords.NONE);
  }

  /**
   * Connects to the database of {@code c} (password from {@code env}) and brings its schema up to
   * date.
   *
   * @throws IllegalArgumentException naming the problem and its fix, within a few seconds
   */
  public static SharedStore postgres(StoreConfig.Postgres c, Map<String, String> env, Clock clock) {
    return postgres(c, env, clock, "");
  }

  /**
   * As {@link #postgres(StoreConfig.Postgres, Map, Clock)} for the server whose home is {@code
   * server}: the sandboxes it makes carry it, and only it adopts them after a restart.
   */
  public static SharedStore postgres(
      StoreConfig.Postgres c, Map<String, String> env, Clock clock, String server) {
    Database db = Database.open(c, env, PostgresTenantStore.POOL_SIZE);
    return new SharedStore(
        new PostgresTenantStore(db, clock, server),
        new PostgresApprovals(db),
        new PostgresSessionBook(db),
        new PostgresE2bRecords(db));
  }

  /**
   * The store {@code config} names: its PostgreSQL database, or the SQLite file under {@code home}.
   *
   * @throws IllegalArgumentException naming what to fix when the database cannot be used
   */
  public static SharedStore open(
      ServerConfig config, Path home, Map<String, String> env, Clock clock) {
    StoreConfig.Postgres pg = config.store().postgres();
    return pg == null
        ? local(TenantStore.open(home.resolve(TenantStore.FILE), clock))
        : postgres(pg, env, clock, home.toAbsolutePath().normalize().toString());
  }

  @Override
  public void close() {
    try {
      approvals.close();
    } finally {
      tenants.close();
    }
  }
}
