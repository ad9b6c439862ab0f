package io.agentnest.server.store;

import io.agentnest.server.config.StoreConfig;
import java.io.IOException;
import java.net.URI;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * Why the server could not reach its database, said so that the operator knows what to change: the
 * password variable, the role, the database, or the address. Never a stack trace, never the
 * password.
 */
final class ConnectErrors {
  private ConnectErrors() {}

  /** The message for a pool that could not make its first connection. */
  static String explain(StoreConfig.Postgres c, Throwable failure) {
    SQLException sql = sqlCause(failure);
    String head = c.where() + ": cannot open the shared store " + c.url() + ": ";
    if (sql == null) {
      return head + problem(failure) + "; " + reachFix(c);
    }
    return head
        + switch (String.valueOf(sql.getSQLState())) {
          case "28P01" ->
              "PostgreSQL refused the password of role '"
                  + c.user()
                  + "': set "
                  + c.passwordEnv()
                  + " to that role's password (ALTER ROLE "
                  + c.user()
                  + " PASSWORD ... changes it)";
          case "28000" ->
              "PostgreSQL refused role '"
                  + c.user()
                  + "' ("
                  + problem(sql)
                  + "): create the role (CREATE ROLE "
                  + c.user()
                  + " LOGIN PASSWORD ...) or allow this host for it in pg_hba.conf";
          case "3D000" ->
              "database '"
                  + database(c.url())
                  + "' does not exist: create it (CREATE DATABASE "
                  + database(c.url())
                  + " OWNER "
                  + c.user()
                  + ") or fix store.postgres.url";
          default -> problem(sql) + "; " + reachFix(c);
        };
  }

  private static String reachFix(StoreConfig.Postgres c) {
    return "check that PostgreSQL runs and listens at "
        + hostPort(c.url())
        + " (on this machine: scripts/postgres.sh up), and that store.postgres.url names it";
  }

  /** The driver's own words for a failure, on one line, without its class names. */
  static String problem(Throwable t) {
    Throwable root = t;
    // The innermost cause says what happened (connection refused, timed out); bounded depth.
    for (int i = 0; i < 10 && root.getCause() != null && root.getCause() != root; i++) {
      if (root instanceof SQLException && root.getCause() instanceof IOException) {
        break;
      }
      root = root.getCause();
    }
    String m = root.getMessage();
    if (root instanceof SQLException && root.getCause() != null) {
      m = m + " (" + root.getCause().getMessage() + ")";
    }
    return m == null ? root.getClass().getSimpleName() : m.replace('\n', ' ').strip();
  }

  private static @Nullable SQLException sqlCause(Throwable t) {
    Throwable c = t;
    for (int i = 0; i < 10 && c != null; i++) {
      if (c instanceof SQLException s && s.getSQLState() != null) {
        return s;
      }
      c = c.getCause();
    }
    return null;
  }

  private static String hostPort(String url) {
    URI u = URI.create(url.substring("jdbc:".length()));
    return u.getHost() + ":" + (u.getPort() < 0 ? 5432 : u.getPort());
  }

  private static String database(String url) {
    String path = URI.create(url.substring("jdbc:".length())).getPath();
    return path.substring(1);
  }
}
