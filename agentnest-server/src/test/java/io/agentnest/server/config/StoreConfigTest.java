package io.agentnest.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class StoreConfigTest {
  private static final String GOOD =
      "store:\n"
          + "  postgres:\n"
          + "    url: jdbc:postgresql://db.example.org:5432/agentnest\n"
          + "    user: agentnest\n"
          + "    password_env: AGENTNEST_DB_PASSWORD\n";

  @Test
  void withoutAStoreBlockTheServerKeepsSqlite() {
    assertThat(ServerConfig.parse("", "s.yaml").store().postgres()).isNull();
    assertThat(ServerConfig.parse("listen: {port: 9000}\n", "s.yaml").store().postgres()).isNull();
  }

  @Test
  void aPostgresBlockIsReadWithWhereItStands() {
    StoreConfig.Postgres p = ServerConfig.parse(GOOD, "s.yaml").store().postgres();
    assertThat(p).isNotNull();
    assertThat(p.url()).isEqualTo("jdbc:postgresql://db.example.org:5432/agentnest");
    assertThat(p.user()).isEqualTo("agentnest");
    assertThat(p.passwordEnv()).isEqualTo("AGENTNEST_DB_PASSWORD");
    assertThat(p.where()).isEqualTo("s.yaml:2:3");
  }

  @Test
  void theFlowStyleReadsTheSame() {
    StoreConfig.Postgres p =
        ServerConfig.parse(
                "store: {postgres: {url: \"jdbc:postgresql://127.0.0.1/a\", user: u,"
                    + " password_env: PW}}\n",
                "s.yaml")
            .store()
            .postgres();
    assertThat(p).isNotNull();
    assertThat(p.where()).isEqualTo("s.yaml:1:9");
  }

  @Test
  void anUnknownKeyIsRefusedWithItsLineColumnAndTheKnownKeys() {
    assertThatThrownBy(() -> ServerConfig.parse(GOOD + "    pasword: hunter2\n", "s.yaml"))
        .hasMessageContaining("s.yaml:6:5")
        .hasMessageContaining("unknown key 'pasword'")
        .hasMessageContaining("password_env");
    assertThatThrownBy(() -> ServerConfig.parse("store:\n  mysql: {}\n", "s.yaml"))
        .hasMessageContaining("s.yaml:2:3")
        .hasMessageContaining("unknown key 'mysql'")
        .hasMessageContaining("postgres");
  }

  @Test
  void aMissingKeyIsNamedWithAnExample() {
    assertThatThrownBy(
            () ->
                ServerConfig.parse(
                    "store:\n  postgres:\n    url: jdbc:postgresql://h/d\n    user: u\n", "s.yaml"))
        .hasMessageContaining("s.yaml:2:3")
        .hasMessageContaining("needs url, user and password_env")
        .hasMessageContaining("password_env: AGENTNEST_DB_PASSWORD");
    assertThatThrownBy(() -> ServerConfig.parse("store: {}\n", "s.yaml"))
        .hasMessageContaining("s.yaml:1:1")
        .hasMessageContaining("leave store out for SQLite");
  }

  @Test
  void theUrlMustBeAPostgresJdbcUrlWithHostAndDatabase() {
    for (String url :
        new String[] {
          "postgres://h/d", "jdbc:mysql://h/d", "jdbc:postgresql://h", "jdbc:postgresql:///d"
        }) {
      assertThatThrownBy(() -> ServerConfig.parse(GOOD.replace(url(), url), "s.yaml"))
          .as(url)
          .hasMessageContaining("s.yaml:3:5")
          .hasMessageContaining("jdbc:postgresql://HOST[:PORT]/DATABASE");
    }
  }

  @Test
  void noSecretInTheUrlAndNoParameterThatLoadsAClass() {
    assertThatThrownBy(
            () ->
                ServerConfig.parse(
                    GOOD.replace(url(), "jdbc:postgresql://u:hunter2@db.example.org/a"), "s.yaml"))
        .hasMessageContaining("must not carry a user or password");
    for (String param :
        new String[] {"password=hunter2", "socketFactory=x.Y", "loggerFile=/tmp/x", "user=root"}) {
      assertThatThrownBy(
              () ->
                  ServerConfig.parse(
                      GOOD.replace(url(), "jdbc:postgresql://db.example.org/a?ssl=true&" + param),
                      "s.yaml"))
          .as(param)
          .hasMessageContaining("s.yaml:3:5")
          .hasMessageContaining("does not take from the URL");
    }
    assertThat(
            ServerConfig.parse(
                    GOOD.replace(url(), "jdbc:postgresql://db.example.org/a?sslmode=verify-full"),
                    "s.yaml")
                .store()
                .postgres())
        .isNotNull();
  }

  @Test
  void passwordEnvMustNameAVariableNotHoldAPassword() {
    assertThatThrownBy(
            () ->
                ServerConfig.parse(
                    GOOD.replace("AGENTNEST_DB_PASSWORD", "\"s3cr3t!pw\""), "s.yaml"))
        .hasMessageContaining("s.yaml:5:5")
        .hasMessageContaining("is not an environment variable name");
  }

  @Test
  void aBadUserIsNamed() {
    assertThatThrownBy(() -> ServerConfig.parse(GOOD.replace("user: agentnest", "user: \"\""), "s"))
        .hasMessageContaining("is not a role name");
  }

  @Test
  void thePasswordComesFromTheNamedVariableAndItsAbsenceSaysHowToSetIt() {
    StoreConfig.Postgres p = ServerConfig.parse(GOOD, "s.yaml").store().postgres();
    assertThat(p).isNotNull();
    assertThat(p.password(Map.of("AGENTNEST_DB_PASSWORD", "pw"))).isEqualTo("pw");
    assertThatThrownBy(() -> p.password(Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("s.yaml:2:3")
        .hasMessageContaining("AGENTNEST_DB_PASSWORD, which is not set")
        .hasMessageContaining("export AGENTNEST_DB_PASSWORD=");
    assertThatThrownBy(() -> p.password(Map.of("AGENTNEST_DB_PASSWORD", "")))
        .hasMessageContaining("not set");
  }

  private static String url() {
    return "jdbc:postgresql://db.example.org:5432/agentnest";
  }
}
