package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import java.io.ByteArrayInputStream;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The PKCS12 trust store Java programs in a sandbox verify TLS with, and how they find it. */
class JavaTrustStoreTest {
  private static final InterceptionCa CA =
      InterceptionCa.create("unit", List.of("api.example.com"), Duration.ofDays(1));

  @AfterEach
  void restore() {
    JavaTrustStore.addDefaultsForTests(List.of());
  }

  @Test
  void theStoreHoldsTheHostsDefaultCasAndTheSandboxCaAsCertificatesOnly() throws Exception {
    byte[] der = JavaTrustStore.build(CA.certificate());
    KeyStore ks = load(der);

    List<String> aliases = Collections.list(ks.aliases());
    assertThat(aliases).hasSize(JavaTrustStore.defaultCertificates().size() + 1);
    // The JDK's cacerts has public roots: a store without them would break every other host.
    assertThat(JavaTrustStore.defaultCertificates()).hasSizeGreaterThan(10);
    assertThat(aliases).allMatch(a -> uncheckedIsCertificateEntry(ks, a));
    assertThat(ks.getCertificate(JavaTrustStore.SANDBOX_CA_ALIAS)).isEqualTo(CA.certificate());
    assertThat(der.length).isLessThanOrEqualTo(JavaTrustStore.MAX_BYTES);
    // No MAC and no encrypted bags: any password opens it, as does none.
    KeyStore noPassword = KeyStore.getInstance("PKCS12");
    noPassword.load(new ByteArrayInputStream(der), null);
    assertThat(noPassword.getCertificate(JavaTrustStore.SANDBOX_CA_ALIAS))
        .isEqualTo(CA.certificate());
  }

  @Test
  void eachSandboxGetsAStoreWithItsOwnCaOnly() throws Exception {
    InterceptionCa second =
        InterceptionCa.create("second", List.of("api.example.com"), Duration.ofDays(1));
    KeyStore first = load(JavaTrustStore.build(CA.certificate()));
    KeyStore other = load(JavaTrustStore.build(second.certificate()));

    assertThat(first.getCertificateAlias(second.certificate())).isNull();
    assertThat(other.getCertificateAlias(CA.certificate())).isNull();
    assertThat(other.getCertificate(JavaTrustStore.SANDBOX_CA_ALIAS))
        .isEqualTo(second.certificate());
  }

  @Test
  void aJvmTrustingTheStoreAcceptsTheProxysLeafButNotAStrangersCertificate() throws Exception {
    X509TrustManager tm = trustManager(load(JavaTrustStore.build(CA.certificate())));
    InterceptionCa stranger =
        InterceptionCa.create("stranger", List.of("api.example.com"), Duration.ofDays(1));

    tm.checkServerTrusted(
        new X509Certificate[] {CA.leaf("api.example.com"), CA.certificate()}, "ECDHE_ECDSA");
    assertThatThrownBy(
            () ->
                tm.checkServerTrusted(
                    new X509Certificate[] {
                      stranger.leaf("api.example.com"), stranger.certificate()
                    },
                    "ECDHE_ECDSA"))
        .isInstanceOf(CertificateException.class);
  }

  @Test
  void aTestHookCaCountsAsADefaultOnlyWhileSet() throws Exception {
    InterceptionCa origin =
        InterceptionCa.create("origin", List.of("other.test"), Duration.ofDays(1));
    JavaTrustStore.addDefaultsForTests(List.of(origin.certificate()));
    X509TrustManager withHook = trustManager(load(JavaTrustStore.build(CA.certificate())));
    JavaTrustStore.addDefaultsForTests(List.of());
    X509TrustManager without = trustManager(load(JavaTrustStore.build(CA.certificate())));
    X509Certificate[] chain = {origin.leaf("other.test"), origin.certificate()};

    withHook.checkServerTrusted(chain, "ECDHE_ECDSA");
    assertThatThrownBy(() -> without.checkServerTrusted(chain, "ECDHE_ECDSA"))
        .isInstanceOf(CertificateException.class);
  }

  @Test
  void userJavaToolOptionsAreKeptAndOursAppended() {
    assertThat(JavaTrustStore.javaToolOptions(null)).isEqualTo(JavaTrustStore.OPTIONS);
    assertThat(JavaTrustStore.javaToolOptions("  ")).isEqualTo(JavaTrustStore.OPTIONS);
    assertThat(JavaTrustStore.javaToolOptions(" -Xmx256m "))
        .isEqualTo("-Xmx256m " + JavaTrustStore.OPTIONS);
    // A user who brought a trust store of their own keeps it, as with SSL_CERT_FILE.
    String own = "-Djavax.net.ssl.trustStore=/workspace/mine.jks -Xss1m";
    assertThat(JavaTrustStore.javaToolOptions(own)).isEqualTo(own);
    assertThat(JavaTrustStore.OPTIONS)
        .isEqualTo(
            "-Djavax.net.ssl.trustStore=/tmp/.agentnest/ca-trust.p12"
                + " -Djavax.net.ssl.trustStorePassword=changeit"
                + " -Djavax.net.ssl.trustStoreType=PKCS12");
  }

  @Test
  void theSandboxEnvPointsJavaAtTheStoreOnlyWhenTheProxyTerminatesTls() {
    NetworkPolicy credentials =
        NetworkPolicy.allow("api.example.com")
            .inject("api.example.com", Header.bearer(Secret.of("token-value-1234")))
            .build();
    Map<String, String> env =
        SecurityPolicy.specFor(SandboxConfig.builder().network(credentials).build()).env();
    Map<String, String> userSet =
        SecurityPolicy.specFor(
                SandboxConfig.builder()
                    .network(credentials)
                    .env("JAVA_TOOL_OPTIONS", "-Xmx256m")
                    .build())
            .env();
    Map<String, String> plain =
        SecurityPolicy.specFor(
                SandboxConfig.builder()
                    .network(NetworkPolicy.allow("api.example.com").build())
                    .build())
            .env();

    assertThat(env).containsEntry("JAVA_TOOL_OPTIONS", JavaTrustStore.OPTIONS);
    assertThat(userSet).containsEntry("JAVA_TOOL_OPTIONS", "-Xmx256m " + JavaTrustStore.OPTIONS);
    assertThat(plain).doesNotContainKey("JAVA_TOOL_OPTIONS");
  }

  private static KeyStore load(byte[] der) throws Exception {
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(new ByteArrayInputStream(der), JavaTrustStore.PASSWORD.toCharArray());
    return ks;
  }

  private static boolean uncheckedIsCertificateEntry(KeyStore ks, String alias) {
    try {
      return ks.isCertificateEntry(alias) && !ks.isKeyEntry(alias);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static X509TrustManager trustManager(KeyStore ks) throws Exception {
    TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
    tmf.init(ks);
    return (X509TrustManager) tmf.getTrustManagers()[0];
  }
}
