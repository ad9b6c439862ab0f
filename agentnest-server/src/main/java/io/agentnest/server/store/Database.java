package io.agentnest.server.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import io.agentnest.server.config.StoreConfig;
import io.agentnest.server.tenancy.StoreUnavailableException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;

/**
 * The pool of connections to the shared database, its schema brought up to date with the versioned
 * migrations on open (Flyway locks the schema while it migrates, so servers starting together run
 * each migration once), and one place that turns a failure into a message naming the fix.
 */
final class Database implements AutoCloseable {
  /** How long opening or borrowing a connection may take before the caller hears why not. */
  static final int CONNECT_SECONDS = 5;

  static final String MIGRATIONS = "classpath:db/migration/postgresql";

  private final HikariDataSource pool;
  private final StoreConfig.Postgres config;

  private Database(HikariDataSource pool, StoreConfig.Postgres config) {
    this.pool = pool;
    this.config = config;
  }

  /**
   * Connects, migrates and returns the pool.
   *
   * @throws IllegalArgumentException naming what is wrong (password variable, address, role,
   *     database) and how to fix it
   */
  static Database open(StoreConfig.Postgres c, Map<String, String> env, int poolSize) {
    HikariConfig h = new HikariConfig();
    h.setJdbcUrl(c.url());
    h.setUsername(c.user());
    h.setPassword(c.password(env));
    h.setPoolName("agentnest-store");
    h.setMaximumPoolSize(poolSize);
    h.setMinimumIdle(1);
    h.setConnectionTimeout(TimeUnit.SECONDS.toMillis(CONNECT_SECONDS));
    h.setValidationTimeout(TimeUnit.SECONDS.toMillis(2));
    // Fail at start, within the bound, rather than on the first request.
    h.setInitializationFailTimeout(TimeUnit.SECONDS.toMillis(CONNECT_SECONDS));
    h.addDataSourceProperty("connectTimeout", CONNECT_SECONDS);
    h.addDataSourceProperty("loginTimeout", CONNECT_SECONDS);
    h.addDataSourceProperty("ApplicationName", "agentnest-server");
    HikariDataSource pool;
    try {
      pool = new HikariDataSource(h);
    } catch (HikariPool.PoolInitializationException e) {
      throw new IllegalArgumentException(ConnectErrors.explain(c, e), e);
    }
    try {
      migrate(pool);
    } catch (FlywayException e) {
      pool.close();
      throw new IllegalArgumentException(
          c.where()
              + ": cannot bring the schema of "
              + c.url()
              + " up to date: "
              + String.valueOf(e.getMessage()).replace('\n', ' ').strip()
              + "; give the server a database of its own, owned by "
              + c.user()
              + " (CREATE DATABASE agentnest OWNER "
              + c.user()
              + ")",
          e);
    }
    return new Database(pool, c);
  }

  private static void migrate(DataSource ds) {
    Flyway.configure()
        .dataSource(ds)
        .locations(MIGRATIONS)
        .table("agentnest_schema_history")
        // The server's database is its own: one already holding other tables is refused, and
        // nothing is ever cleaned. (A baseline on migrate would race between servers starting
        // together on an empty database.)
        .cleanDisabled(true)
        .load()
        .migrate();
  }

  /** A pooled connection (auto-commit on); close it to give it back. */
  Connection connection() {
    try {
      return pool.getConnection();
    } catch (SQLException e) {
      throw unavailable(e);
    }
  }

  /**
   * A new connection outside the pool, for a listener that holds one for as long as the server runs
   * (a pooled one would be taken from the requests).
   */
  Connection dedicated() throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", pool.getUsername());
    p.setProperty("password", pool.getPassword());
    p.setProperty("connectTimeout", String.valueOf(CONNECT_SECONDS));
    p.setProperty("loginTimeout", String.valueOf(CONNECT_SECONDS));
    p.setProperty("tcpKeepAlive", "true");
    p.setProperty("ApplicationName", "agentnest-server-listener");
    return DriverManager.getConnection(config.url(), p);
  }

  /** What a failed statement tells the caller: the store, the problem, the fix. */
  StoreUnavailableException unavailable(SQLException e) {
    return new StoreUnavailableException(
        "the shared store at "
            + config.url()
            + " failed: "
            + ConnectErrors.problem(e)
            + "; check that PostgreSQL runs and the server may reach it",
        e);
  }

  /** A short name of the database for labels: the same for every server that shares it. */
  String identity() {
    return config.url() + "#" + config.user();
  }

  @Override
  public void close() {
    pool.close();
  }
}
