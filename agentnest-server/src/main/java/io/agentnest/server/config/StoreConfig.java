package io.agentnest.server.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The {@code store:} block of {@code server.yaml}: where the server keeps what several servers must
 * share (tenants, API keys, quota use, approval questions). Without it the server keeps them in
 * SQLite under AGENTNEST_HOME, the default for one machine.
 *
 * <pre>{@code
 * store:
 *   postgres:
 *     url: jdbc:postgresql://db.example.org:5432/agentnest
 *     user: agentnest
 *     password_env: AGENTNEST_DB_PASSWORD
 * }</pre>
 *
 * The password is never written in the file: it comes from the environment variable named by {@code
 * password_env}, read when the server starts.
 *
 * @param postgres the PostgreSQL database, or null for SQLite
 */
public record StoreConfig(@Nullable Postgres postgres) {
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");

  /**
   * URL parameters the server refuses: a secret belongs in the environment, and a parameter that
   * makes the driver load a class or write a file is nothing a store needs.
   */
  private static final List<String> REFUSED_PARAMETERS =
      List.of(
          "user",
          "password",
          "sslpassword",
          "sslfactory",
          "sslfactoryarg",
          "sslhostnameverifier",
          "sslpasswordcallback",
          "socketfactory",
          "socketfactoryarg",
          "authenticationpluginclassname",
          "loggerfile");

  /** SQLite under AGENTNEST_HOME. */
  public static StoreConfig sqlite() {
    return new StoreConfig(null);
  }

  /**
   * A PostgreSQL database.
   *
   * @param url a {@code jdbc:postgresql://host[:port]/database} URL without a password
   * @param user the role the server logs in as
   * @param passwordEnv the environment variable that holds its password
   * @param where the file, line and column of the block, for errors when the server starts
   */
  public record Postgres(String url, String user, String passwordEnv, String where) {
    /**
     * The password from {@code env}.
     *
     * @throws IllegalArgumentException naming the variable and how to set it
     */
    public String password(Map<String, String> env) {
      String p = env.get(passwordEnv);
      if (p == null || p.isEmpty()) {
        throw new IllegalArgumentException(
            where
                + ": store.postgres.password_env names "
                + passwordEnv
                + ", which is not set: export "
                + passwordEnv
                + "=<the password of "
                + user
                + "> before starting the server");
      }
      return p;
    }
  }

  record Shape(@Nullable PostgresShape postgres) {}

  record PostgresShape(
      @Nullable String url,
      @Nullable String user,
      @JsonProperty("password_env") @Nullable String passwordEnv) {}

  /**
   * Checks the block; {@code where} gives the file, line and column of a key.
   *
   * @throws IllegalArgumentException naming the key and the fix
   */
  static StoreConfig parse(@Nullable Shape shape, UnaryOperator<String> where) {
    if (shape == null || shape.postgres() == null) {
      if (shape != null) {
        throw new IllegalArgumentException(
            where.apply("store")
                + ": store names no database: write store: {postgres: {url: ..., user: ...,"
                + " password_env: ...}}, or leave store out for SQLite");
      }
      return sqlite();
    }
    PostgresShape p = shape.postgres();
    String at = where.apply("postgres");
    String example =
        "e.g. postgres: {url: jdbc:postgresql://db.example.org:5432/agentnest, user: agentnest,"
            + " password_env: AGENTNEST_DB_PASSWORD}";
    if (p.url() == null || p.user() == null || p.passwordEnv() == null) {
      throw new IllegalArgumentException(
          at + ": store.postgres needs url, user and password_env, " + example);
    }
    String url = checkUrl(where.apply("url"), p.url().strip());
    String user = p.user().strip();
    if (user.isEmpty() || user.length() > 63 || user.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          where.apply("user")
              + ": store.postgres.user '"
              + user.replace("\0", "\\0")
              + "' is not a role name: use 1 to 63 characters, e.g. agentnest");
    }
    if (!ENV_NAME.matcher(p.passwordEnv()).matches()) {
      throw new IllegalArgumentException(
          where.apply("password_env")
              + ": store.postgres.password_env '"
              + p.passwordEnv()
              + "' is not an environment variable name: write its name, not the password, e.g."
              + " AGENTNEST_DB_PASSWORD");
    }
    return new StoreConfig(new Postgres(url, user, p.passwordEnv(), at));
  }

  private static String checkUrl(String at, String url) {
    String prefix = "jdbc:postgresql://";
    String fix =
        ": write jdbc:postgresql://HOST[:PORT]/DATABASE, e.g. " + prefix + "127.0.0.1/agentnest";
    if (!url.startsWith(prefix)) {
      throw new IllegalArgumentException(
          at + ": store.postgres.url '" + url + "' is not a PostgreSQL JDBC URL" + fix);
    }
    URI uri;
    try {
      uri = new URI(url.substring("jdbc:".length()));
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(
          at + ": store.postgres.url '" + url + "' is not a URL (" + e.getReason() + ")" + fix, e);
    }
    String path = uri.getPath();
    if (uri.getHost() == null || path == null || path.length() < 2) {
      throw new IllegalArgumentException(
          at + ": store.postgres.url '" + url + "' names no host or no database" + fix);
    }
    if (uri.getUserInfo() != null) {
      throw new IllegalArgumentException(
          at
              + ": store.postgres.url must not carry a user or password: name the user in"
              + " store.postgres.user and the password's variable in password_env");
    }
    String query = uri.getRawQuery();
    if (query != null) {
      for (String param : query.split("&")) {
        String name = param.split("=", 2)[0].toLowerCase(Locale.ROOT);
        if (REFUSED_PARAMETERS.contains(name)) {
          throw new IllegalArgumentException(
              at
                  + ": store.postgres.url sets '"
                  + name
                  + "', which the server does not take from the URL: the user goes in"
                  + " store.postgres.user, the password in the variable named by password_env,"
                  + " and no parameter may name a class or file for the driver to load");
        }
      }
    }
    return url;
  }
}
