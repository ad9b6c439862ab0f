package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ServerConfigTest {
  @Test
  void defaultsListenOnLoopback8787() {
    ServerConfig c = ServerConfig.parse("", "server.yaml");
    assertThat(c.host()).isEqualTo("127.0.0.1");
    assertThat(c.port()).isEqualTo(8787);
    AgentNestServer.checkBind(c);
  }

  @Test
  void readsSizesDurationsAndPolicy() {
    ServerConfig c =
        ServerConfig.parse(
            "max_body: 2m\npolicy:\n  max_memory: 1g\n  max_ttl: 2h\n  allow_hosts: [pypi.org]\n",
            "server.yaml");
    assertThat(c.maxBodyBytes()).isEqualTo(2L << 20);
    assertThat(c.policy().maxMemoryBytes()).isEqualTo(1L << 30);
    assertThat(c.policy().maxTtl()).isEqualTo(Duration.ofHours(2));
    assertThat(c.policy().allowHosts()).containsExactly("pypi.org");
  }

  @Test
  void anUnknownKeyNamesFileLineColumnAndTheKnownKeys() {
    assertThatThrownBy(() -> ServerConfig.parse("listen:\n  hots: 0.0.0.0\n", "server.yaml"))
        .hasMessageContaining("server.yaml:2:")
        .hasMessageContaining("'hots'")
        .hasMessageContaining("host");
  }

  @Test
  void aBadDurationSaysHowToWriteOne() {
    assertThatThrownBy(() -> ServerConfig.parse("policy:\n  max_ttl: forever\n", "s.yaml"))
        .hasMessageContaining("90s, 30m, 2h or 1d");
  }

  @Test
  void aNonLoopbackBindWithoutTlsIsRefusedUnlessBehindAProxy() {
    ServerConfig open = ServerConfig.defaults().withListen("0.0.0.0", 8787);
    assertThatThrownBy(() -> AgentNestServer.checkBind(open))
        .hasMessageContaining("without TLS")
        .hasMessageContaining("--insecure-behind-proxy");
    AgentNestServer.checkBind(open.withInsecureBehindProxy(true));
  }
}
