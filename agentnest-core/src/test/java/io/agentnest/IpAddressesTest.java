package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IpAddressesTest {
  private static InetAddress ip(String literal) {
    return IpAddresses.parseLiteral(literal).orElseThrow();
  }

  @ParameterizedTest
  @CsvSource({
    "::ffff:127.0.0.1, 127.0.0.1",
    "::ffff:0:a9fe:a9fe, 169.254.169.254",
    "64:ff9b::a9fe:a9fe, 169.254.169.254",
    "2002:0a00:0001::, 10.0.0.1",
    "::10.1.2.3, 10.1.2.3"
  })
  void embeddedIpv4IsFoundInEveryFormThatCarriesOne(String v6, String v4) {
    assertThat(IpAddresses.embeddedIpv4(ip(v6)).map(IpAddresses::format)).contains(v4);
  }

  @ParameterizedTest
  @ValueSource(strings = {"::", "::1", "2001:db8::1", "10.0.0.1"})
  void addressesThatEmbedNoIpv4HaveNone(String literal) {
    assertThat(IpAddresses.embeddedIpv4(ip(literal))).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {"::ffff:127.0.0.1", "64:ff9b::7f00:1"})
  void aRangeContainsAnEmbeddedAddressButNotExactly(String v6) {
    IpAddresses.Range loopback = IpAddresses.Range.parse("127.0.0.0/8");
    assertThat(loopback.contains(ip(v6))).isTrue();
    assertThat(loopback.containsExactly(ip(v6))).isFalse();
    assertThat(loopback.containsExactly(ip("127.0.0.1"))).isTrue();
  }
}
