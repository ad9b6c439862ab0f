package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.IpAddresses;
import io.agentnest.IpAddresses.Range;
import io.agentnest.internal.egress.AddressRules.Category;
import java.net.Inet6Address;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class AddressRulesTest {

  private static InetAddress ip(String literal) {
    return IpAddresses.parseLiteral(literal)
        .orElseThrow(() -> new AssertionError("not a literal: " + literal));
  }

  @ParameterizedTest(name = "{0} is {1}")
  @CsvSource({
    // IPv4
    "0.0.0.0, UNSPECIFIED",
    "0.1.2.3, THIS_NETWORK",
    "0.255.255.255, THIS_NETWORK",
    "10.0.0.1, PRIVATE",
    "10.255.255.255, PRIVATE",
    "100.64.0.1, PRIVATE",
    "100.127.255.255, PRIVATE",
    "100.100.100.200, PRIVATE",
    "100.63.255.255, PUBLIC",
    "100.128.0.0, PUBLIC",
    "127.0.0.1, LOOPBACK",
    "127.255.255.254, LOOPBACK",
    "169.254.169.254, LINK_LOCAL",
    "169.254.0.1, LINK_LOCAL",
    "172.16.0.1, PRIVATE",
    "172.31.255.255, PRIVATE",
    "172.15.255.255, PUBLIC",
    "172.32.0.0, PUBLIC",
    "192.0.0.1, PROTOCOL_ASSIGNMENT",
    "192.0.0.170, PROTOCOL_ASSIGNMENT",
    "192.0.2.1, DOCUMENTATION",
    "198.51.100.7, DOCUMENTATION",
    "203.0.113.9, DOCUMENTATION",
    "192.88.99.1, RESERVED",
    "192.168.1.1, PRIVATE",
    "198.18.0.1, BENCHMARKING",
    "198.19.255.255, BENCHMARKING",
    "198.20.0.0, PUBLIC",
    "224.0.0.1, MULTICAST",
    "239.255.255.250, MULTICAST",
    "240.0.0.1, RESERVED",
    "255.255.255.254, RESERVED",
    "255.255.255.255, BROADCAST",
    "8.8.8.8, PUBLIC",
    "1.1.1.1, PUBLIC",
    "151.101.0.223, PUBLIC",
    // IPv6
    "::, UNSPECIFIED",
    "::1, LOOPBACK",
    "fe80::1, LINK_LOCAL",
    "febf::1, LINK_LOCAL",
    "fec0::1, PRIVATE",
    "fc00::1, PRIVATE",
    "fd00:ec2::254, PRIVATE",
    "ff02::1, MULTICAST",
    "ff0e::1, MULTICAST",
    "2001:db8::1, DOCUMENTATION",
    "3fff::1, DOCUMENTATION",
    "100::1, RESERVED",
    "2001::1, PROTOCOL_ASSIGNMENT",
    "2001:2::1, BENCHMARKING",
    "64:ff9b:1::1, PRIVATE",
    "4000::1, RESERVED",
    "2606:4700:4700::1111, PUBLIC",
    "2a00:1450:4001:80b::200e, PUBLIC",
    // IPv4 embedded in IPv6: the embedded address decides
    "::ffff:127.0.0.1, LOOPBACK",
    "::ffff:7f00:1, LOOPBACK",
    "::ffff:169.254.169.254, LINK_LOCAL",
    "::ffff:10.0.0.1, PRIVATE",
    "::ffff:192.168.0.1, PRIVATE",
    "::ffff:0.0.0.0, UNSPECIFIED",
    "::ffff:255.255.255.255, BROADCAST",
    "::ffff:8.8.8.8, PUBLIC",
    "::127.0.0.1, LOOPBACK",
    "::169.254.169.254, LINK_LOCAL",
    "::8.8.8.8, RESERVED",
    "::ffff:0:127.0.0.1, LOOPBACK",
    "64:ff9b::127.0.0.1, LOOPBACK",
    "64:ff9b::a9fe:a9fe, LINK_LOCAL",
    "64:ff9b::10.1.2.3, PRIVATE",
    "64:ff9b::8.8.8.8, PUBLIC",
    "2002:7f00:1::, LOOPBACK",
    "2002:a9fe:a9fe::1, LINK_LOCAL",
    "2002:808:808::1, PUBLIC"
  })
  void classifiesEachRange(String literal, Category expected) {
    InetAddress address = ip(literal);
    assertThat(AddressRules.classify(address)).isEqualTo(expected);
    assertThat(AddressRules.isPublic(address)).isEqualTo(expected == Category.PUBLIC);
  }

  @Test
  void classifiesMappedAddressesAlsoWhenJavaConvertsThemToIpv4() throws Exception {
    // InetAddress.getByName turns ::ffff:a.b.c.d into an Inet4Address.
    assertThat(AddressRules.classify(InetAddress.getByName("::ffff:169.254.169.254")))
        .isEqualTo(Category.LINK_LOCAL);
    byte[] mapped = new byte[16];
    mapped[10] = (byte) 0xff;
    mapped[11] = (byte) 0xff;
    mapped[12] = 127;
    mapped[15] = 1;
    InetAddress v6 = Inet6Address.getByAddress(null, mapped, -1);
    assertThat(v6).isInstanceOf(Inet6Address.class);
    assertThat(AddressRules.classify(v6)).isEqualTo(Category.LOOPBACK);
  }

  @Test
  void categoriesDescribeThemselves() {
    assertThat(Category.LINK_LOCAL.description()).contains("169.254.169.254");
    assertThat(Category.LOOPBACK.description()).isEqualTo("a loopback address");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "127.1",
        "127.0.1",
        "0x7f.0.0.1",
        "0x7f000001",
        "2130706433",
        "017.0.0.1",
        "127.000.0.1",
        "256.0.0.1",
        "1.2.3.4.5",
        "1.2.3.",
        "fe80::1%eth0",
        "[fe80::1%25eth0]",
        "example.com",
        "[127.0.0.1]",
        "[example.com]",
        "1:2:3:4:5:6:7:8:9",
        "12345::1",
        "g::1",
        ":",
        "",
        "localhost"
      })
  void parseLiteralIsStrict(String text) {
    assertThat(IpAddresses.parseLiteral(text)).isEmpty();
  }

  @Test
  void parseLiteralAcceptsCanonicalForms() {
    assertThat(IpAddresses.format(ip("127.0.0.1"))).isEqualTo("127.0.0.1");
    assertThat(IpAddresses.format(ip("[::1]"))).isEqualTo("::1");
    assertThat(IpAddresses.format(ip("0:0:0:0:0:0:0:1"))).isEqualTo("::1");
    assertThat(IpAddresses.format(ip("2001:DB8:0:0:1:0:0:1"))).isEqualTo("2001:db8::1:0:0:1");
    assertThat(IpAddresses.format(ip("::ffff:127.0.0.1"))).isEqualTo("::ffff:7f00:1");
    assertThat(IpAddresses.format(ip("fe80::"))).isEqualTo("fe80::");
    assertThat(IpAddresses.format(ip("1:0:2:0:3:0:4:5"))).isEqualTo("1:0:2:0:3:0:4:5");
    assertThat(ip("::ffff:127.0.0.1")).isInstanceOf(Inet6Address.class);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"127.1", "0x7f.0.0.1", "2130706433", "017.0.0.1", "1.2.3.4", "foo.123", "::1"})
  void looksLikeIpLiteralCatchesNumericSpellings(String host) {
    assertThat(IpAddresses.looksLikeIpLiteral(host)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"pypi.org", "1password.com", "123.example.com", "a1.b2", "xn--80ak6aa92e.com"})
  void looksLikeIpLiteralLeavesNamesAlone(String host) {
    assertThat(IpAddresses.looksLikeIpLiteral(host)).isFalse();
  }

  @Test
  void cidrMatching() {
    Range loop = Range.parse("127.0.0.0/8");
    assertThat(loop.contains(ip("127.0.0.1"))).isTrue();
    assertThat(loop.contains(ip("127.255.255.255"))).isTrue();
    assertThat(loop.contains(ip("128.0.0.0"))).isFalse();
    assertThat(loop.contains(ip("::1"))).isFalse();
    // IPv6 forms embedding a covered IPv4 address are covered too.
    assertThat(loop.contains(ip("::ffff:127.0.0.1"))).isTrue();
    assertThat(loop.contains(ip("64:ff9b::127.0.0.1"))).isTrue();
    assertThat(loop.prefixLength()).isEqualTo(8);
    assertThat(loop).hasToString("127.0.0.0/8").isEqualTo(Range.parse("127.0.0.0/8"));

    Range one = Range.parse("10.1.2.3");
    assertThat(one).hasToString("10.1.2.3");
    assertThat(one.contains(ip("10.1.2.3"))).isTrue();
    assertThat(one.contains(ip("10.1.2.4"))).isFalse();
    assertThat(Range.parse("10.1.2.3/32")).isEqualTo(one);

    Range ula = Range.parse("fc00::/7");
    assertThat(ula.contains(ip("fd00::1"))).isTrue();
    assertThat(ula.contains(ip("fe00::1"))).isFalse();
    assertThat(Range.parse("0.0.0.0/0").contains(ip("8.8.8.8"))).isTrue();
    assertThat(Range.parse("172.16.0.0/12").contains(ip("172.31.0.1"))).isTrue();
    assertThat(Range.parse("172.16.0.0/12").contains(ip("172.32.0.1"))).isFalse();
    assertThat(Range.parse("2001:DB8::/32")).hasToString("2001:db8::/32");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"10.0.0.1/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "host/8", "/8"})
  void invalidCidrsAreRefused(String text) {
    assertThatThrownBy(() -> Range.parse(text)).isInstanceOf(IllegalArgumentException.class);
  }
}
