package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RemoteServerTest {
  @Test
  void plainHttpIsOnlyForLoopback() {
    new RemoteServer(URI.create("http://127.0.0.1:8787"), Secret.of("key1"));
    new RemoteServer(URI.create("https://sandbox.internal:8787"), Secret.of("key1"));
    assertThatThrownBy(
            () -> new RemoteServer(URI.create("http://sandbox.internal:8787"), Secret.of("key1")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("use https");
    assertThatThrownBy(() -> new RemoteServer(URI.create("ftp://x"), Secret.of("key1")))
        .hasMessageContaining("http(s)");
  }

  @Test
  void theEnvironmentNamesUrlAndKeyTogether() {
    assertThat(RemoteServer.fromEnvironment(Map.of())).isEmpty();
    assertThat(
            RemoteServer.fromEnvironment(
                Map.of("AGENTNEST_URL", "http://127.0.0.1:1", "AGENTNEST_API_KEY", "key1")))
        .get()
        .extracting(RemoteServer::url)
        .isEqualTo(URI.create("http://127.0.0.1:1"));
    assertThatThrownBy(
            () -> RemoteServer.fromEnvironment(Map.of("AGENTNEST_URL", "http://127.0.0.1:1")))
        .hasMessageContaining("AGENTNEST_API_KEY");
  }

  @Test
  void theKeyNeverShowsInTheConfigsText() {
    RemoteServer s = new RemoteServer(URI.create("http://127.0.0.1:1"), Secret.of("ank_secret"));
    assertThat(s.toString()).doesNotContain("ank_secret");
    assertThat(SandboxConfig.builder().remote(s).build().remote()).isEqualTo(s);
  }

  /**
   * The attack of issue 42 (15): a name that merely starts with "127." is the attacker's host; the
   * key must not go to it over plain http. Only loopback literals and localhost count.
   */
  @Test
  void aNameThatLooksLikeLoopbackIsRefusedForPlainHttp() {
    for (String host :
        List.of(
            "127.attacker.example",
            "127.0.0.1.attacker.example",
            "127.0.0.1.nip.io",
            "localhost.attacker.example",
            "[::2]",
            "[::ffff:10.0.0.1]")) {
      assertThatThrownBy(
              () -> new RemoteServer(URI.create("http://" + host + ":8787"), Secret.of("key1")),
              host)
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("use https");
    }
    for (String host :
        List.of("127.0.0.1", "127.1.2.3", "localhost", "[::1]", "[0:0:0:0:0:0:0:1]")) {
      assertThat(new RemoteServer(URI.create("http://" + host + ":8787"), Secret.of("key1")).url())
          .hasHost(host);
    }
  }
}
