package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Locale;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class NetworkPolicyTest {

  @Test
  void noneDeniesEverything() {
    NetworkPolicy p = NetworkPolicy.none();
    assertThat(p.isNone()).isTrue();
    assertThat(p.onUnknownHost()).isEqualTo(NetworkPolicy.Mode.DENY);
    assertThat(p.rules()).isEmpty();
    assertThat(p.allowedAddresses()).isEmpty();
    assertThat(p.match("pypi.org", 443)).isEmpty();
    assertThat(p.match("127.0.0.1", 80)).isEmpty();
    assertThat(NetworkPolicy.builder().build()).isEqualTo(p);
  }

  @Test
  void exactNameMatchesOnlyThatNameOnTheDefaultPorts() {
    NetworkPolicy p = NetworkPolicy.allowlist("pypi.org");
    assertThat(p.match("pypi.org", 443)).contains(new NetworkPolicy.Match("pypi.org", false));
    assertThat(p.match("pypi.org", 80)).isPresent();
    assertThat(p.match("pypi.org", 8080)).isEmpty();
    assertThat(p.match("pypi.org", 22)).isEmpty();
    assertThat(p.match("files.pypi.org", 443)).isEmpty();
    assertThat(p.match("evil-pypi.org", 443)).isEmpty();
    assertThat(p.match("pypi.org.evil.com", 443)).isEmpty();
    assertThat(p.match("pypi.org", 0)).isEmpty();
    assertThat(p.match("pypi.org", 70000)).isEmpty();
  }

  @Test
  void wildcardMatchesSubdomainsUpToThreeLabelsDeepButNotTheBareDomainOrLookalikes() {
    NetworkPolicy p = NetworkPolicy.allowlist("*.pythonhosted.org");
    assertThat(p.match("files.pythonhosted.org", 443))
        .contains(new NetworkPolicy.Match("*.pythonhosted.org", false));
    assertThat(p.match("a.b.pythonhosted.org", 443)).isPresent();
    assertThat(p.match("a.b.c.pythonhosted.org", 443)).isPresent();
    assertThat(p.match("a.b.c.d.pythonhosted.org", 443)).isEmpty();
    assertThat(p.wildcardRefusal("a.b.c.d.pythonhosted.org", 443))
        .hasValueSatisfying(
            why -> assertThat(why).contains("more than 3 labels below *.pythonhosted.org"));
    assertThat(p.match("pythonhosted.org", 443)).isEmpty();
    assertThat(p.match("evil-pythonhosted.org", 443)).isEmpty();
    assertThat(p.match("evilpythonhosted.org", 443)).isEmpty();
    assertThat(p.match(".pythonhosted.org", 443)).isEmpty();
    assertThat(p.match("files.pythonhosted.org.evil.com", 443)).isEmpty();
    assertThat(p.match("files.pythonhosted.org", 8443)).isEmpty();
  }

  @Test
  void aWildcardNeverReachesAPublicResolversDnsOverHttpsOrDnsOverTls() {
    NetworkPolicy p =
        NetworkPolicy.allowlist("*.dns.google", "*.cloudflare-dns.com", "*.example.org");
    // A resolver of its own would let sandbox code look up (and send data through) any name.
    assertThat(p.match("eu.dns.google", 443)).isEmpty();
    assertThat(p.match("mozilla.cloudflare-dns.com", 443)).isEmpty();
    assertThat(p.wildcardRefusal("mozilla.cloudflare-dns.com", 443))
        .hasValueSatisfying(why -> assertThat(why).contains("serves DNS over HTTPS"));
    assertThat(p.match("www.example.org", 853)).isEmpty();
    assertThat(p.wildcardRefusal("www.example.org", 853))
        .hasValueSatisfying(why -> assertThat(why).contains("port 853"));
    assertThat(p.match("www.example.org", 443)).isPresent();
    assertThat(p.wildcardRefusal("www.example.org", 443)).isEmpty();
    assertThat(p.wildcardRefusal("unrelated.test", 443)).isEmpty();
    // Named exactly, a resolver is the user's explicit choice.
    assertThat(NetworkPolicy.allowlist("dns.google").match("dns.google", 443)).isPresent();
    assertThat(NetworkPolicy.allowlist("dns.google:853").match("dns.google", 853)).isPresent();
  }

  @Test
  void explicitPortReplacesTheDefaultPorts() {
    NetworkPolicy p = NetworkPolicy.allowlist("registry.example.com:8443", "*.svc.example:5000");
    assertThat(p.match("registry.example.com", 8443))
        .contains(new NetworkPolicy.Match("registry.example.com:8443", false));
    assertThat(p.match("registry.example.com", 443)).isEmpty();
    assertThat(p.match("registry.example.com", 80)).isEmpty();
    assertThat(p.match("a.svc.example", 5000)).isPresent();
    assertThat(p.match("a.svc.example", 5001)).isEmpty();
  }

  @Test
  void namesAreCaseInsensitiveAndTrailingDotsAreIgnored() {
    NetworkPolicy p = NetworkPolicy.allowlist("PyPI.ORG.", "*.Example.COM");
    assertThat(p.rules()).containsExactly("pypi.org", "*.example.com");
    assertThat(p.match("pypi.org", 443)).isPresent();
    assertThat(p.match("PYPI.org.", 443)).isPresent();
    assertThat(p.match("WWW.example.com.", 443)).isPresent();
    assertThat(p.match("pypi.org..", 443)).isEmpty();
  }

  @Test
  void internationalisedNamesAreComparedInPunycode() {
    NetworkPolicy p = NetworkPolicy.allowlist("bücher.example", "*.münchen.example");
    assertThat(p.rules()).containsExactly("xn--bcher-kva.example", "*.xn--mnchen-3ya.example");
    assertThat(p.match("xn--bcher-kva.example", 443)).isPresent();
    assertThat(p.match("BÜCHER.example", 443)).isPresent();
    assertThat(p.match("www.xn--mnchen-3ya.example", 443)).isPresent();
    assertThat(p.match("www.münchen.example", 443)).isPresent();
    assertThat(p.match("bucher.example", 443)).isEmpty();
    assertThat(NetworkPolicy.allowlist("xn--bcher-kva.example"))
        .isEqualTo(NetworkPolicy.allowlist("bücher.example"));
  }

  @Test
  void normalizeHostGivesTheCanonicalFormOrNothing() {
    assertThat(NetworkPolicy.normalizeHost("Files.PythonHosted.org."))
        .contains("files.pythonhosted.org");
    assertThat(NetworkPolicy.normalizeHost("bücher.example")).contains("xn--bcher-kva.example");
    assertThat(NetworkPolicy.normalizeHost("a..b")).isEmpty();
    assertThat(NetworkPolicy.normalizeHost("a b")).isEmpty();
    assertThat(NetworkPolicy.normalizeHost("127.1")).isEmpty();
    assertThat(NetworkPolicy.normalizeHost("")).isEmpty();
    assertThat(NetworkPolicy.normalizeHost("-a.com")).isEmpty();
  }

  @Test
  void allowAddressCoversIpLiteralTargetsOnAnyPort() throws Exception {
    NetworkPolicy p =
        NetworkPolicy.builder().allowAddress("127.0.0.0/8").allowAddress("::1").build();
    assertThat(p.allowedAddresses()).containsExactly("127.0.0.0/8", "::1");
    assertThat(p.match("127.0.0.1", 5432)).contains(new NetworkPolicy.Match("127.0.0.0/8", true));
    assertThat(p.match("127.9.9.9", 1)).isPresent();
    assertThat(p.match("[::1]", 443)).contains(new NetworkPolicy.Match("::1", true));
    assertThat(p.match("::1", 443)).isPresent();
    assertThat(p.match("128.0.0.1", 443)).isEmpty();
    assertThat(p.match("10.0.0.1", 443)).isEmpty();
    // Non-canonical spellings of 127.0.0.1 are neither names nor literals: nothing matches.
    assertThat(p.match("127.1", 443)).isEmpty();
    assertThat(p.match("2130706433", 443)).isEmpty();
    assertThat(p.match("0x7f.0.0.1", 443)).isEmpty();
    assertThat(p.matchAddress(InetAddress.getByName("127.0.0.53"))).isPresent();
    assertThat(p.matchAddress(InetAddress.getByName("10.0.0.1"))).isEmpty();
  }

  @Test
  void singleAddressAndIpv6RangesAreAccepted() {
    NetworkPolicy p =
        NetworkPolicy.builder()
            .allowAddress("10.1.2.3")
            .allowAddress("fd00::/8")
            .allowAddress("10.1.2.3/32")
            .build();
    assertThat(p.allowedAddresses()).containsExactly("10.1.2.3", "fd00::/8");
    assertThat(p.match("10.1.2.3", 80)).isPresent();
    assertThat(p.match("10.1.2.4", 80)).isEmpty();
    assertThat(p.match("[fd12::1]", 80)).isPresent();
    assertThat(p.match("[fe80::1]", 80)).isEmpty();
  }

  @Test
  void nameRulesNeverMatchIpLiterals() {
    NetworkPolicy p = NetworkPolicy.allowlist("*.example.com");
    assertThat(p.match("127.0.0.1", 443)).isEmpty();
    assertThat(p.match("[::1]", 443)).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "*.",
        "a..b",
        "*.*.x",
        "host:0",
        "host:99999",
        "host:",
        "host:abc",
        "host:-1",
        " pypi.org",
        "pypi.org ",
        "py pi.org",
        "pypi.org\t",
        "",
        "*",
        "*.com",
        "foo*.bar",
        "*foo.bar",
        "a.*.bar",
        ".pypi.org",
        "-a.com",
        "a-.com",
        "a_b.com",
        "127.0.0.1",
        "127.0.0.1:443",
        "[::1]:443",
        "::1",
        "example.123",
        "pypi.org..",
        "a\u0000b.com"
      })
  void invalidRulesAreRefusedNamingTheFieldAndTheFix(String rule) {
    assertThatThrownBy(() -> NetworkPolicy.allowlist(rule))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("network.allow")
        .hasMessageContaining("'" + rule + "'")
        .hasMessageContaining("such as");
  }

  @Test
  void tooLongLabelsAndNamesAreRefused() {
    String label = "a".repeat(64);
    assertThatThrownBy(() -> NetworkPolicy.allowlist(label + ".com"))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("63");
    String name = ("a".repeat(60) + ".").repeat(5) + "com";
    assertThatThrownBy(() -> NetworkPolicy.allowlist(name))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("253");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"", "localhost", "10.0.0.0/33", "10.0.0.1/8", "10.0.0.0/", "1.2.3", "::1/129"})
  void invalidAddressesAreRefused(String cidr) {
    assertThatThrownBy(() -> NetworkPolicy.builder().allowAddress(cidr).build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("network.allowAddress")
        .hasMessageContaining("127.0.0.0/8");
  }

  @Test
  void hostBitsBeyondThePrefixSuggestTheRange() {
    assertThatThrownBy(() -> NetworkPolicy.builder().allowAddress("10.0.0.1/8").build())
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("did you mean 10.0.0.0/8");
  }

  @Test
  void approvalTimeoutMustBePositiveAndBounded() {
    for (Duration d : new Duration[] {Duration.ZERO, Duration.ofSeconds(-1), Duration.ofHours(2)}) {
      assertThatThrownBy(() -> NetworkPolicy.builder().approvalTimeout(d).build())
          .isExactlyInstanceOf(ConfigException.class)
          .hasMessageContaining("network.approvalTimeout");
    }
    assertThat(NetworkPolicy.builder().build().approvalTimeout())
        .isEqualTo(NetworkPolicy.DEFAULT_APPROVAL_TIMEOUT);
  }

  @Test
  void askModeAndTimeoutAreKeptAndToBuilderRoundTrips() {
    NetworkPolicy p =
        NetworkPolicy.builder()
            .allow("pypi.org")
            .allow("pypi.org")
            .allowAddress("10.0.0.0/8")
            .onUnknownHost(NetworkPolicy.Mode.ASK)
            .approvalTimeout(Duration.ofSeconds(5))
            .build();
    assertThat(p.rules()).containsExactly("pypi.org");
    assertThat(p.onUnknownHost()).isEqualTo(NetworkPolicy.Mode.ASK);
    assertThat(p.approvalTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(p.isNone()).isFalse();
    assertThat(p.toBuilder().build()).isEqualTo(p).hasSameHashCodeAs(p);
    assertThat(p.toString()).contains("pypi.org", "10.0.0.0/8", "ASK");
    assertThat(p.toBuilder().allow("x.org").build().rules()).containsExactly("pypi.org", "x.org");
    assertThat(p.rules()).containsExactly("pypi.org");
  }

  @Property(tries = 300)
  void wildcardMatchesExactlyTheNamesBelowTheDomain(
      @ForAll("names") String domain, @ForAll("labels") String sub) {
    NetworkPolicy p = NetworkPolicy.allowlist("*." + domain);
    assertThat(p.match(sub + "." + domain, 443)).isPresent();
    assertThat(p.match(sub + "." + sub + "." + domain.toUpperCase(Locale.ROOT), 80)).isPresent();
    assertThat(p.match(String.join(".", sub, sub, sub, sub, domain), 443)).isEmpty();
    assertThat(p.match(domain, 443)).isEmpty();
    assertThat(p.match(sub + "-" + domain, 443)).isEmpty();
    assertThat(p.match(sub + domain, 443)).isEmpty();
    assertThat(p.match(sub + "." + domain + ".evil", 443)).isEmpty();
  }

  @Provide
  Arbitrary<String> labels() {
    return Arbitraries.strings().withCharRange('a', 'z').ofMinLength(1).ofMaxLength(12);
  }

  @Provide
  Arbitrary<String> names() {
    return labels().list().ofMinSize(2).ofMaxSize(4).map(l -> String.join(".", l));
  }

  @Test
  void requestRulesBelongToHostsWithCredentialRules() {
    NetworkPolicy p =
        NetworkPolicy.allow("api.github.com", "pypi.org")
            .inject("API.GitHub.com", Header.bearer(Secret.of("token-value-1234")))
            .restrict("api.github.com", RequestRule.of("/repos/acme/", "GET"))
            .restrict(
                "api.github.com", RequestRule.of("/user"), RequestRule.of("/repos/acme/", "GET"))
            .build();
    assertThat(p.requestRules("api.github.com"))
        .containsExactly(RequestRule.of("/repos/acme/", "GET"), RequestRule.of("/user"));
    assertThat(p.requestRules("pypi.org")).isEmpty();
    assertThat(p.toBuilder().build()).isEqualTo(p);

    assertThatThrownBy(
            () ->
                NetworkPolicy.allow("api.github.com", "pypi.org")
                    .inject("api.github.com", Header.bearer(Secret.of("token-value-1234")))
                    .restrict("pypi.org", RequestRule.of("/simple/"))
                    .build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("apply only to a host with credential rules");
    assertThatThrownBy(
            () ->
                NetworkPolicy.allow("api.github.com")
                    .inject("api.github.com", Header.bearer(Secret.of("token-value-1234")))
                    .restrict("api.github.com")
                    .build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("names no request rule");
  }

  @Test
  void decisionsAreRememberedByDefault() {
    assertThat(NetworkPolicy.builder().build().remembersDecisions()).isTrue();
    NetworkPolicy p = NetworkPolicy.builder().rememberDecisions(false).build();
    assertThat(p.remembersDecisions()).isFalse();
    assertThat(p).isNotEqualTo(NetworkPolicy.builder().build());
  }
}
