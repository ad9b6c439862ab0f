package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** DNS rebinding: only names nobody else can point at 127.0.0.1 pass, parsed, not prefixed. */
class LoopbackNamesTest {

  @ParameterizedTest
  @ValueSource(
      strings = {
        "localhost",
        "localhost:8765",
        "LocalHost:8765",
        "127.0.0.1",
        "127.0.0.1:8765",
        "127.255.254.1:1",
        "127.0.0.1:65535",
        "[::1]",
        "[::1]:8765",
        "[0:0:0:0:0:0:0:1]:8765",
        "[0::1]",
        "[::0:1]"
      })
  void loopbackHostsPass(String host) {
    assertThat(LoopbackNames.isLoopbackHost(host)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        // rebinding names that start or end like loopback
        "127.0.0.1.attacker.example",
        "127.0.0.1.attacker.example:8765",
        "127.attacker.example",
        "localhost.attacker.example",
        "LOCALHOST.attacker.example:8765",
        "attacker.localhost",
        "attacker.example",
        "127-0-0-1.nip.io",
        // trailing dots
        "localhost.",
        "localhost.:8765",
        "127.0.0.1.",
        "127.0.0.1.:8765",
        // other spellings of 127.0.0.1 that resolvers or browsers may accept
        "0177.0.0.1",
        "0x7f.0.0.1",
        "0x7F000001",
        "127.1",
        "127.0.1",
        "2130706433",
        "127.0.0.01",
        "127.000.000.001",
        "127.0.0.256",
        "127.0.0.1 ",
        " 127.0.0.1",
        "127.0.0.1\t",
        // other addresses
        "0.0.0.0",
        "10.0.0.1",
        "128.0.0.1",
        "::1",
        "[::1",
        "::1]",
        "[::2]",
        "[::]",
        "[::1%lo]",
        "[::1%25lo]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[1::1]",
        "[::1::]",
        "[0:0:0:0:0:0:0:0:1]",
        "[00000::1]",
        "[::1]x",
        "[::1]:",
        // ports
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:99999999999",
        "127.0.0.1:+80",
        "127.0.0.1:80:80",
        "localhost:http",
        // user info, paths, empty
        "user@127.0.0.1",
        "127.0.0.1/x",
        ""
      })
  void everythingElseIsRefused(String host) {
    assertThat(LoopbackNames.isLoopbackHost(host)).isFalse();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "http://localhost:6274",
        "http://127.0.0.1",
        "https://127.0.0.1:8443",
        "http://[::1]:3000",
        "HTTP://LOCALHOST:3000"
      })
  void loopbackOriginsPass(String origin) {
    assertThat(LoopbackNames.isLoopbackOrigin(origin)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "null",
        "",
        "https://evil.example",
        "http://127.0.0.1.attacker.example",
        "http://localhost.attacker.example:6274",
        "http://localhost.",
        "http://0x7f.0.0.1",
        "http://127.1:8765",
        "http://[::1%25lo]:3000",
        "http://evil.example@127.0.0.1",
        "http://127.0.0.1/path",
        "file://localhost",
        "chrome-extension://abcdef",
        "ws://127.0.0.1",
        "http//127.0.0.1",
        "127.0.0.1"
      })
  void otherOriginsAreRefused(String origin) {
    assertThat(LoopbackNames.isLoopbackOrigin(origin)).isFalse();
  }
}
