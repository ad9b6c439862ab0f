package io.agentnest.server.store;

import io.agentnest.server.config.StoreConfig;
import io.agentnest.tck.Prerequisites;
import java.net.URI;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;

/**
 * A database of its own in the test PostgreSQL (scripts/postgres.sh; found through
 * AGENTNEST_TEST_POSTGRES_URL, _USER and _PASSWORD), made with a random name and dropped on close.
 * Without a reachable PostgreSQL the test is skipped, or fails under CI=true.
 */
final class TestPostgres implements AutoCloseable {
  /** The variable the stores of a test read their password from. */
  static final String PASSWORD_ENV = "AGENTNEST_IT_DB_PASSWORD";

  private static final SecureRandom RANDOM = new SecureRandom();

  private final String adminUrl;
  private final String user;
  private final String password;
  final String database;

  private TestPostgres(String adminUrl, String user, String password, String database) {
    this.adminUrl = adminUrl;
    this.user = user;
    this.password = password;
    this.database = database;
  }

  /**
   * Makes a fresh database, or skips (fails under CI) when there is no PostgreSQL to make it in.
   */
  static TestPostgres create() {
    String url = System.getenv("AGENTNEST_TEST_POSTGRES_URL");
    String user = System.getenv("AGENTNEST_TEST_POSTGRES_USER");
    String password = System.getenv("AGENTNEST_TEST_POSTGRES_PASSWORD");
    String fix =
        "start one with scripts/postgres.sh up, then eval \"$(scripts/postgres.sh env)\" before"
            + " running the tests";
    if (url == null || user == null || password == null) {
      Prerequisites.missing(
          "PostgreSQL", "AGENTNEST_TEST_POSTGRES_URL, _USER or _PASSWORD is not set: " + fix);
      throw new IllegalStateException("unreachable");
    }
    String name = "agentnest_it_" + HexFormat.of().formatHex(bytes(6));
    try (Connection c = DriverManager.getConnection(url, props(user, password));
        Statement s = c.createStatement()) {
      // The name is made here from hex digits only: nothing outside the test reaches this SQL.
      s.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      Prerequisites.missing(
          "PostgreSQL", url + " does not answer (" + e.getMessage() + "): " + fix);
      throw new IllegalStateException("unreachable", e);
    }
    return new TestPostgres(url, user, password, name);
  }

  private static byte[] bytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  private static Properties props(String user, String password) {
    Properties p = new Properties();
    p.setProperty("user", user);
    p.setProperty("password", password);
    p.setProperty("connectTimeout", "5");
    return p;
  }

  /** The JDBC URL of this test's database. */
  String url() {
    URI admin = URI.create(adminUrl.substring("jdbc:".length()));
    return "jdbc:postgresql://" + admin.getHost() + ":" + admin.getPort() + "/" + database;
  }

  String user() {
    return user;
  }

  /** store.postgres for this database. */
  StoreConfig.Postgres config() {
    return new StoreConfig.Postgres(url(), user, PASSWORD_ENV, "test.yaml:1:1");
  }

  /** The server's environment: the password in {@link #PASSWORD_ENV}. */
  Map<String, String> env() {
    return Map.of(PASSWORD_ENV, password);
  }

  /** A new store (its own pool) on this database, as one more server would open it. */
  PostgresTenantStore store() {
    return PostgresTenantStore.open(config(), env(), Clock.systemUTC());
  }

  /** A new shared store (tenants and approvals, its own pool) as one more server opens it. */
  SharedStore shared() {
    return SharedStore.postgres(config(), env(), Clock.systemUTC());
  }

  /** As {@link #shared()}, for the server whose home is {@code server}. */
  SharedStore shared(String server) {
    return SharedStore.postgres(config(), env(), Clock.systemUTC(), server);
  }

  /** A connection to this database as the test's superuser (for checks and for breaking it). */
  Connection connect() throws SQLException {
    return DriverManager.getConnection(url(), props(user, password));
  }

  /** A connection to the cluster's maintenance database. */
  Connection admin() throws SQLException {
    return DriverManager.getConnection(adminUrl, props(user, password));
  }

  @Override
  public void close() throws SQLException {
    try (Connection c = admin();
        Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
    }
  }
}
