package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.cli.Processes.Run;
import io.agentnest.tck.Prerequisites;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two real {@code agentnest serve} processes on one PostgreSQL database (scripts/postgres.sh),
 * configured by server.yaml's {@code store.postgres}: a tenant added with {@code agentnest tenant
 * --config} is served by both, a key revoked the same way is refused by both, and a wrong password
 * stops {@code serve} with a config error naming the variable. The test makes its own database and
 * drops it; without PostgreSQL it is skipped, or fails under CI=true.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ServePostgresCliIT {
  private static final String PASSWORD_ENV = "AGENTNEST_IT_DB_PASSWORD";
  private static final SecureRandom RANDOM = new SecureRandom();

  @TempDir Path dir;
  private String adminUrl = "";
  private Properties admin = new Properties();
  private String database = "";
  private final List<Process> servers = new ArrayList<>();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeEach
  void database() throws SQLException {
    String url = System.getenv("AGENTNEST_TEST_POSTGRES_URL");
    String user = System.getenv("AGENTNEST_TEST_POSTGRES_USER");
    String password = System.getenv("AGENTNEST_TEST_POSTGRES_PASSWORD");
    if (url == null || user == null || password == null) {
      Prerequisites.missing(
          "PostgreSQL",
          "AGENTNEST_TEST_POSTGRES_URL, _USER or _PASSWORD is not set: start one with"
              + " scripts/postgres.sh up, then eval \"$(scripts/postgres.sh env)\"");
      return;
    }
    adminUrl = url;
    admin.setProperty("user", user);
    admin.setProperty("password", password);
    admin.setProperty("connectTimeout", "5");
    byte[] raw = new byte[6];
    RANDOM.nextBytes(raw);
    database = "agentnest_cli_it_" + HexFormat.of().formatHex(raw);
    try (Connection c = DriverManager.getConnection(adminUrl, admin);
        Statement s = c.createStatement()) {
      // Hex digits only, made here: nothing from outside the test reaches this statement.
      s.execute("CREATE DATABASE " + database);
    }
  }

  @AfterEach
  void drop() throws Exception {
    for (Process p : servers) {
      p.destroy();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
      }
    }
    if (!database.isEmpty()) {
      try (Connection c = DriverManager.getConnection(adminUrl, admin);
          Statement s = c.createStatement()) {
        s.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
      }
    }
  }

  private Path serverYaml() throws Exception {
    URI u = URI.create(adminUrl.substring("jdbc:".length()));
    return Files.writeString(
        dir.resolve("server.yaml"),
        "store:\n  postgres:\n"
            + "    url: jdbc:postgresql://"
            + u.getHost()
            + ":"
            + u.getPort()
            + "/"
            + database
            + "\n    user: "
            + admin.getProperty("user")
            + "\n    password_env: "
            + PASSWORD_ENV
            + "\n");
  }

  private Map<String, String> env(String password) {
    return Map.of("AGENTNEST_HOME", dir.resolve("cli-home").toString(), PASSWORD_ENV, password);
  }

  private int status(String url, String key) throws Exception {
    HttpRequest r =
        HttpRequest.newBuilder(URI.create(url + "/v1/approvals"))
            .timeout(Duration.ofSeconds(30))
            .header("Authorization", "Bearer " + key)
            .GET()
            .build();
    return http.send(r, HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  @Test
  void twoServersOnOneDatabaseServeTheTenantsTheCliManagesThere() throws Exception {
    Path yaml = serverYaml();
    Map<String, String> env = env(admin.getProperty("password"));
    Run add =
        Processes.run(
            Processes.cli("tenant", "add", "ops", "--config", yaml.toString()),
            Path.of("."),
            120,
            env);
    assertThat(add.exit()).as(add.err()).isZero();
    String key = add.out().strip();

    List<String> urls = new ArrayList<>();
    for (String name : List.of("one", "two")) {
      ServeProcess.Started s =
          ServeProcess.serve(
              Files.createDirectories(dir.resolve(name)),
              List.of("--config", yaml.toString()),
              env);
      servers.add(s.process());
      urls.add(s.url());
    }
    for (String url : urls) {
      assertThat(status(url, key)).as(url).isEqualTo(200);
    }
    Run revoke =
        Processes.run(
            Processes.cli("tenant", "revoke", key.substring(4, 20), "--config", yaml.toString()),
            Path.of("."),
            120,
            env);
    assertThat(revoke.exit()).as(revoke.err()).isZero();
    for (String url : urls) {
      assertThat(status(url, key)).as(url).isEqualTo(401);
    }
  }

  @Test
  void aWrongPasswordStopsServeWithAConfigErrorNamingTheVariable() throws Exception {
    Path yaml = serverYaml();
    Run serve =
        Processes.run(
            Processes.cli("serve", "--listen", "127.0.0.1:0", "--config", yaml.toString()),
            Path.of("."),
            120,
            env("not-the-password"));
    assertThat(serve.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(serve.err())
        .contains("server.yaml:2:3")
        .contains("refused the password of role")
        .contains("set " + PASSWORD_ENV)
        .doesNotContain("\tat ");
  }
}
