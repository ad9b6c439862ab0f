package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertPathValidator;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

/** The per-sandbox CA, the credential rules of a policy, and response masking. */
class InterceptionCaTest {
  private static final InterceptionCa CA =
      InterceptionCa.create(
          "unit", List.of("api.example.com", "b.example.org"), Duration.ofDays(1));

  @Test
  void aMintedLeafChainsToTheCaAndNamesItsHost() throws Exception {
    X509Certificate leaf = CA.leaf("api.example.com");

    validate(leaf);
    assertThat(
            leaf.getSubjectAlternativeNames().stream().map(n -> String.valueOf(n.get(1))).toList())
        .containsExactly("api.example.com");
    assertThat(leaf.getBasicConstraints()).isEqualTo(-1);
    assertThat(CA.certificate().getBasicConstraints()).isZero();
    assertThat(CA.leaf("api.example.com")).isSameAs(leaf); // minted once, cached
  }

  @Test
  void theCaSignsOnlyForHostsWithCredentialRules() {
    assertThatThrownBy(() -> CA.leaf("evil.example.net"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no credential rule");
  }

  @Test
  void theCaIsNameConstrainedSoAnyOtherLeafItSignedWouldBeRejected() throws Exception {
    // The name-constraints extension (2.5.29.30) is present and critical.
    assertThat(CA.certificate().getCriticalExtensionOIDs()).contains("2.5.29.30");
    InterceptionCa other =
        InterceptionCa.create("other", List.of("evil.example.net"), Duration.ofDays(1));
    assertThatThrownBy(() -> validate(other.leaf("evil.example.net")))
        .isInstanceOf(CertPathValidatorException.class);
  }

  @Test
  void thePemIsTheCertificateAloneNeverAKey() {
    String pem = CA.certificatePem();

    assertThat(pem).startsWith("-----BEGIN CERTIFICATE-----").doesNotContain("PRIVATE KEY");
  }

  @Test
  void credentialRulesNeedAnAllowedExactHost() {
    Header h = Header.bearer(Secret.of("token-value-1234"));

    assertThatThrownBy(
            () -> NetworkPolicy.allow("api.example.com").inject("other.example.com", h).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'other.example.com' is not allowed by any network.allow rule");
    assertThatThrownBy(
            () -> NetworkPolicy.allow("*.example.com").inject("*.example.com", h).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("name one host exactly");
    assertThat(
            NetworkPolicy.allow("*.example.com")
                .inject("API.Example.com.", h)
                .build()
                .credentialHosts())
        .isEqualTo(Set.of("api.example.com"));
  }

  @Test
  void placeholderVariablesMustBeNamesAndUnique() {
    Secret s = Secret.of("token-value-1234");
    assertThatThrownBy(
            () -> NetworkPolicy.allow("a.example").placeholder("a.example", "1BAD", s).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("not an environment variable name");
    assertThatThrownBy(
            () ->
                NetworkPolicy.allow("a.example", "b.example")
                    .placeholder("a.example", "KEY", s)
                    .placeholder("b.example", "KEY", s)
                    .build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("KEY is given twice");
  }

  @Test
  void headerTemplatesParseWithOneSecretAndRefuseInjection() {
    Header h =
        Header.parse(
            "Authorization: Bearer ${secret:GITHUB_TOKEN}", n -> Secret.named(n, "abcd-1234"));

    assertThat(h.name()).isEqualTo("Authorization");
    assertThat(h.value()).isEqualTo("Bearer abcd-1234");
    assertThat(h.secretName()).isEqualTo("GITHUB_TOKEN");
    assertThat(h.toString()).doesNotContain("abcd-1234");
    assertThatThrownBy(() -> Header.parse("Authorization: Bearer x", n -> Secret.of("abcd-1234")))
        .hasMessageContaining("names no secret");
    assertThatThrownBy(() -> Header.parse("Host: ${secret:X}", n -> Secret.of("abcd-1234")))
        .hasMessageContaining("cannot be injected");
    assertThatThrownBy(() -> Header.of("X-Key", "a\r\nInjected: 1", Secret.of("abcd-1234"), ""))
        .hasMessageContaining("control");
  }

  @Test
  void secretFromAnUnsetVariableNamesTheVariableAndTheFix() {
    assertThatThrownBy(() -> Secret.fromEnv("AGENTNEST_SURELY_UNSET_VARIABLE_42"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("export AGENTNEST_SURELY_UNSET_VARIABLE_42");
  }

  /** However a response is cut into writes, no secret passes the mask, and lengths are kept. */
  @Property(tries = 300)
  void maskingNeverLetsASecretThroughAndKeepsTheLength(
      @ForAll @StringLength(min = 0, max = 200) String filler,
      @ForAll @IntRange(min = 1, max = 50) int cut)
      throws IOException {
    String secret = "s3cr3t-T0ken-xyz";
    String body = filler + secret + filler + secret.substring(0, 5) + secret + filler;
    byte[] in = body.getBytes(StandardCharsets.UTF_8);
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m =
        new MaskingOutputStream(sink, List.of(secret.getBytes(StandardCharsets.UTF_8)));
    for (int i = 0; i < in.length; i += cut) {
      m.write(in, i, Math.min(cut, in.length - i));
    }
    m.finish();

    String out = sink.toString(StandardCharsets.UTF_8);
    assertThat(out).doesNotContain(secret);
    assertThat(sink.size()).isEqualTo(in.length);
  }

  /** A placeholder is swapped only toward its own host: another host never gets its secret. */
  @Property(tries = 500)
  void aPlaceholderNeverBecomesItsSecretTowardAnotherHost(
      @ForAll @StringLength(max = 40) String filler,
      @ForAll boolean toA,
      @ForAll @IntRange(min = 0, max = 3) int which) {
    NetworkPolicy.Placeholder a =
        new NetworkPolicy.Placeholder("a.example", "KEY_A", Secret.of("secret-of-a-1234"));
    NetworkPolicy.Placeholder b =
        new NetworkPolicy.Placeholder("b.example", "KEY_B", Secret.of("secret-of-b-5678"));
    Map<NetworkPolicy.Placeholder, String> tokens = new LinkedHashMap<>();
    tokens.put(a, "agentnest-placeholder-aaaa");
    tokens.put(b, "agentnest-placeholder-bbbb");
    String value =
        switch (which) {
          case 0 -> filler + tokens.get(a);
          case 1 -> tokens.get(b) + filler;
          case 2 -> tokens.get(a) + filler + tokens.get(b);
          default -> filler;
        };
    String host = toA ? "a.example" : "b.example";
    Set<NetworkPolicy.Placeholder> swapped = new HashSet<>();

    String out = Interceptor.swap(value, host, tokens, swapped);

    NetworkPolicy.Placeholder foreign = toA ? b : a;
    assertThat(out).doesNotContain(foreign.secret().reveal());
    assertThat(swapped).doesNotContain(foreign);
    NetworkPolicy.Placeholder own = toA ? a : b;
    assertThat(out).doesNotContain(tokens.get(own));
  }

  private static void validate(X509Certificate leaf) throws Exception {
    PKIXParameters p = new PKIXParameters(Set.of(new TrustAnchor(CA.certificate(), null)));
    p.setRevocationEnabled(false);
    CertPathValidator.getInstance("PKIX")
        .validate(CertificateFactory.getInstance("X.509").generateCertPath(List.of(leaf)), p);
  }
}
