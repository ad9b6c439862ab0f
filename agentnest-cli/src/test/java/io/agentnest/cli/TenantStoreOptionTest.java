package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `agentnest tenant ... --config server.yaml` changes the store server.yaml names: SQLite under
 * AGENTNEST_HOME when it names none, and a PostgreSQL store whose problems are config errors naming
 * the fix (the store itself is tested against a real PostgreSQL in the server's ITs).
 */
class TenantStoreOptionTest {
  @TempDir Path home;
  private final PrintStream err = System.err;
  private final ByteArrayOutputStream printed = new ByteArrayOutputStream();

  @BeforeEach
  void useHome() {
    System.setProperty("agentnest.home", home.toString());
    System.setErr(new PrintStream(printed, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    System.setErr(err);
    System.clearProperty("agentnest.home");
  }

  @Test
  void aServerYamlWithoutAStoreMeansTheSqliteFileUnderHome() throws Exception {
    Path yaml = Files.writeString(home.resolve("server.yaml"), "listen: {port: 0}\n");
    assertThat(AgentNestCli.execute("tenant", "add", "search", "--config", yaml.toString()))
        .isZero();
    try (TenantStore s = TenantStore.open(home.resolve(TenantStore.FILE), Clock.systemUTC())) {
      assertThat(s.find("search")).map(Tenant::name).contains("search");
    }
  }

  @Test
  void aPostgresStoreWithoutItsPasswordVariableIsAConfigErrorNamingIt() throws Exception {
    String variable = "AGENTNEST_TEST_UNSET_DB_PASSWORD_7f3a";
    Path yaml =
        Files.writeString(
            home.resolve("server.yaml"),
            "store:\n  postgres:\n    url: jdbc:postgresql://127.0.0.1:1/agentnest\n"
                + "    user: agentnest\n    password_env: "
                + variable
                + "\n");
    assertThat(AgentNestCli.execute("tenant", "ls", "--config", yaml.toString()))
        .isEqualTo(ExitCodes.CONFIG);
    assertThat(printed.toString(StandardCharsets.UTF_8))
        .contains("server.yaml:2:3")
        .contains(variable + ", which is not set")
        .doesNotContain("\tat ");
  }

  @Test
  void aBadStoreBlockIsAConfigErrorWithItsLine() throws Exception {
    Path yaml =
        Files.writeString(
            home.resolve("server.yaml"), "store:\n  postgres:\n    url: mysql://h/d\n");
    assertThat(AgentNestCli.execute("tenant", "ls", "--config", yaml.toString()))
        .isEqualTo(ExitCodes.CONFIG);
    assertThat(printed.toString(StandardCharsets.UTF_8))
        .contains("needs url, user and password_env");
  }
}
