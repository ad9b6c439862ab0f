package io.agentnest.internal.egress;

import io.agentnest.UnsupportedControlException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.jspecify.annotations.Nullable;

/**
 * The trust store Java programs in the sandbox use: Java reads neither PEM bundles nor {@code
 * SSL_CERT_FILE}, so the host writes a PKCS12 store of certificate entries (the host JVM's default
 * trusted CAs and the sandbox's interception CA) that the agent installs at {@link #PATH}, and
 * {@code JAVA_TOOL_OPTIONS} points every JVM there.
 *
 * <p>The store's password is fixed and public on purpose: a trust store holds only public
 * certificates, no key, and Java insists on some password to check the store's integrity MAC. The
 * sandbox can rewrite the file anyway; it only decides whom that sandbox's own clients trust.
 */
public final class JavaTrustStore {
  /** Where the agent writes the store, beside {@link Interception#BUNDLE_PATH}. */
  public static final String PATH = "/tmp/.agentnest/ca-trust.p12";

  /** The variable every JVM reads its extra options from. */
  public static final String TOOL_OPTIONS_VARIABLE = "JAVA_TOOL_OPTIONS";

  /** Public by design (see the class comment). */
  public static final String PASSWORD = "changeit";

  /** What {@code JAVA_TOOL_OPTIONS} gets so that every JVM in the sandbox uses the store. */
  public static final String OPTIONS =
      "-Djavax.net.ssl.trustStore="
          + PATH
          + " -Djavax.net.ssl.trustStorePassword="
          + PASSWORD
          + " -Djavax.net.ssl.trustStoreType=PKCS12";

  /** The agent refuses a larger store: the JDK's cacerts as PKCS12 is about a tenth of this. */
  public static final int MAX_BYTES = 1 << 20;

  /** More default CAs than this means a host trust store no sandbox should get a copy of. */
  static final int MAX_DEFAULT_CERTIFICATES = 1000;

  static final String SANDBOX_CA_ALIAS = "agentnest-sandbox-ca";

  private static volatile @Nullable List<X509Certificate> defaults;
  private static volatile List<X509Certificate> extraForTests = List.of();

  private JavaTrustStore() {}

  /**
   * {@code JAVA_TOOL_OPTIONS} for a sandbox whose user set {@code userValue} (null: not set). The
   * user's options are kept and ours appended; a user who names a trust store of their own keeps it
   * (as a user's own {@code SSL_CERT_FILE} is kept).
   */
  public static String javaToolOptions(@Nullable String userValue) {
    if (userValue == null || userValue.isBlank()) {
      return OPTIONS;
    }
    if (userValue.contains("-Djavax.net.ssl.trustStore=")) {
      return userValue;
    }
    return userValue.strip() + " " + OPTIONS;
  }

  /**
   * The PKCS12 store (DER bytes) trusting the host's default CAs and {@code sandboxCa}, at most
   * {@link #MAX_BYTES}.
   */
  public static byte[] build(X509Certificate sandboxCa) {
    List<X509Certificate> certs = defaultCertificates();
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      int i = 0;
      for (X509Certificate c : certs) {
        ks.setCertificateEntry(String.format("default-%04d", i++), c);
      }
      ks.setCertificateEntry(SANDBOX_CA_ALIAS, sandboxCa);
      ByteArrayOutputStream out = new ByteArrayOutputStream(certs.size() * 1500 + 4096);
      ks.store(out, PASSWORD.toCharArray());
      byte[] der = out.toByteArray();
      if (der.length > MAX_BYTES) {
        throw new UnsupportedControlException(
            "the sandbox's Java trust store would be "
                + der.length
                + " bytes (over "
                + MAX_BYTES
                + "): the host JVM trusts too many CAs; run it with a smaller"
                + " javax.net.ssl.trustStore");
      }
      return der;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot build the sandbox's Java trust store", e);
    }
  }

  /** The host JVM's default trusted CAs (its javax.net.ssl.trustStore or the JDK's cacerts). */
  static List<X509Certificate> defaultCertificates() {
    List<X509Certificate> d = defaults;
    if (d == null) {
      d = loadDefaults();
      defaults = d;
    }
    List<X509Certificate> extra = extraForTests;
    if (extra.isEmpty()) {
      return d;
    }
    List<X509Certificate> all = new ArrayList<>(d);
    all.addAll(extra);
    return all;
  }

  private static List<X509Certificate> loadDefaults() {
    try {
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init((KeyStore) null);
      for (TrustManager tm : tmf.getTrustManagers()) {
        if (tm instanceof X509TrustManager x) {
          X509Certificate[] issuers = x.getAcceptedIssuers();
          if (issuers.length > MAX_DEFAULT_CERTIFICATES) {
            throw new UnsupportedControlException(
                "the host JVM trusts "
                    + issuers.length
                    + " CAs (over "
                    + MAX_DEFAULT_CERTIFICATES
                    + "), too many to copy into a sandbox's Java trust store; run it with a"
                    + " smaller javax.net.ssl.trustStore");
          }
          return List.of(issuers);
        }
      }
      throw new IllegalStateException("the JDK's default trust manager is not an X.509 one");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot read the host JVM's default trusted CAs", e);
    }
  }

  /**
   * Integration tests only: sandboxes created from now on also trust {@code certificates} as if
   * they were among the host's default CAs (a test origin's CA standing in for a public one); an
   * empty list restores the defaults. Like {@link UpstreamTrust#replaceForTests}, no configuration
   * or public API reaches it.
   */
  public static void addDefaultsForTests(List<X509Certificate> certificates) {
    extraForTests = List.copyOf(certificates);
  }
}
