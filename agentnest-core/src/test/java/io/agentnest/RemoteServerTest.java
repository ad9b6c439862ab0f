package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
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
}
