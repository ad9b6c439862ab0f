package io.agentnest.internal.egress;

import io.agentnest.UnsupportedControlException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.ASN1EncodableVector;
import org.bouncycastle.asn1.ASN1Encoding;
import org.bouncycastle.asn1.ASN1ObjectIdentifier;
import org.bouncycastle.asn1.DERBMPString;
import org.bouncycastle.asn1.DEROctetString;
import org.bouncycastle.asn1.DERSequence;
import org.bouncycastle.asn1.DERSet;
import org.bouncycastle.asn1.pkcs.CertBag;
import org.bouncycastle.asn1.pkcs.PKCSObjectIdentifiers;
import org.bouncycastle.asn1.pkcs.SafeBag;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.jspecify.annotations.Nullable;

/**
 * The trust store Java programs in the sandbox use: Java reads neither PEM bundles nor {@code
 * SSL_CERT_FILE}, so the host writes a PKCS12 store of certificate entries (the host JVM's default
 * trusted CAs and the sandbox's interception CA) that the agent installs at {@link #PATH}, and
 * {@code JAVA_TOOL_OPTIONS} points every JVM there.
 *
 * <p>The store's password is fixed and public on purpose: a trust store holds only public
 * certificates, no key, so there is nothing to keep secret (and the store has no MAC for a password
 * to check). It is set anyway because tools that open a trust store ask for one. The sandbox can
 * rewrite the file; it only decides whom that sandbox's own clients trust.
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

  // Oracle's "trusted key usage" attribute: the JDK loads a certBag carrying it as a trusted
  // certificate entry (without it, a bag is ignored by a trust manager).
  private static final ASN1ObjectIdentifier JDK_TRUSTED_KEY_USAGE =
      new ASN1ObjectIdentifier("2.16.840.1.113894.746875.1.1");
  private static final byte[] PFX_VERSION = {0x02, 0x01, 0x03};
  private static final byte[] OID_DATA = encoded(PKCSObjectIdentifiers.data);

  private static volatile @Nullable Defaults cached;
  private static volatile List<X509Certificate> extraForTests = List.of();

  private JavaTrustStore() {}

  private static byte[] encoded(ASN1ObjectIdentifier oid) {
    try {
      return oid.getEncoded(ASN1Encoding.DER);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

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
   *
   * <p>Assembled here rather than by {@link KeyStore#store}, which re-encodes every certificate and
   * derives two PBKDF2 keys (cert encryption and MAC, 10,000 rounds each) for each sandbox: about
   * 12 ms p50 on the development machine against well under one here, on a path pool hand-outs
   * take. The certificates go unencrypted and without a MAC: with a public password neither would
   * protect anything, and the JDK (17 and later) loads such a store with any password.
   */
  public static byte[] build(X509Certificate sandboxCa) {
    Defaults d = defaults();
    byte[] ca = certBag(sandboxCa, SANDBOX_CA_ALIAS);
    byte[] safeContents = Der.tlv(Der.SEQUENCE, d.bags(), ca);
    byte[] authenticatedSafe = Der.tlv(Der.SEQUENCE, dataContentInfo(safeContents));
    byte[] pfx = Der.tlv(Der.SEQUENCE, PFX_VERSION, dataContentInfo(authenticatedSafe));
    if (pfx.length > MAX_BYTES) {
      throw new UnsupportedControlException(
          "the sandbox's Java trust store would be "
              + pfx.length
              + " bytes (over "
              + MAX_BYTES
              + "): the host JVM trusts too many CAs; run it with a smaller"
              + " javax.net.ssl.trustStore");
    }
    return pfx;
  }

  /** The host JVM's default trusted CAs (its javax.net.ssl.trustStore or the JDK's cacerts). */
  static List<X509Certificate> defaultCertificates() {
    return defaults().certificates();
  }

  private static Defaults defaults() {
    List<X509Certificate> extra = extraForTests;
    Defaults d = cached;
    if (d == null || !d.extra().equals(extra)) {
      List<X509Certificate> all = new ArrayList<>(loadDefaults());
      all.addAll(extra);
      ByteArrayOutputStream bags = new ByteArrayOutputStream(all.size() * 1500);
      for (int i = 0; i < all.size(); i++) {
        bags.writeBytes(certBag(all.get(i), String.format(Locale.ROOT, "default-%04d", i)));
      }
      d = new Defaults(List.copyOf(all), extra, bags.toByteArray());
      cached = d;
    }
    return d;
  }

  /** The host's default CAs, the test hook's additions, and their encoded bags, made once. */
  private record Defaults(
      List<X509Certificate> certificates, List<X509Certificate> extra, byte[] bags) {}

  /** A ContentInfo of type data holding {@code content} (PKCS#7). */
  private static byte[] dataContentInfo(byte[] content) {
    return Der.tlv(
        Der.SEQUENCE, OID_DATA, Der.tlv(Der.EXPLICIT_0, Der.tlv(Der.OCTET_STRING, content)));
  }

  /**
   * A PKCS#12 certBag for {@code cert} with its alias and the attribute by which the JDK loads it
   * as a trusted certificate entry (Oracle's trusted key usage: any extended key usage).
   */
  private static byte[] certBag(X509Certificate cert, String alias) {
    try {
      CertBag bag =
          new CertBag(PKCSObjectIdentifiers.x509Certificate, new DEROctetString(cert.getEncoded()));
      ASN1EncodableVector attrs = new ASN1EncodableVector();
      attrs.add(
          new DERSequence(
              new ASN1Encodable[] {
                PKCSObjectIdentifiers.pkcs_9_at_friendlyName, new DERSet(new DERBMPString(alias))
              }));
      attrs.add(
          new DERSequence(
              new ASN1Encodable[] {
                JDK_TRUSTED_KEY_USAGE, new DERSet(KeyPurposeId.anyExtendedKeyUsage.toOID())
              }));
      return new SafeBag(PKCSObjectIdentifiers.certBag, bag, new DERSet(attrs))
          .getEncoded(ASN1Encoding.DER);
    } catch (CertificateEncodingException | IOException e) {
      throw new IllegalStateException("cannot encode a certificate for the Java trust store", e);
    }
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

  /** Just enough DER to wrap encoded parts: a tag and a definite length before the content. */
  private static final class Der {
    static final int SEQUENCE = 0x30;
    static final int OCTET_STRING = 0x04;
    static final int EXPLICIT_0 = 0xA0;

    private Der() {}

    static byte[] tlv(int tag, byte[]... parts) {
      int n = 0;
      for (byte[] p : parts) {
        n += p.length;
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream(n + 6);
      out.write(tag);
      if (n < 0x80) {
        out.write(n);
      } else {
        int bytes = (32 - Integer.numberOfLeadingZeros(n) + 7) / 8;
        out.write(0x80 | bytes);
        for (int i = bytes - 1; i >= 0; i--) {
          out.write(n >>> (8 * i));
        }
      }
      for (byte[] p : parts) {
        out.writeBytes(p);
      }
      return out.toByteArray();
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
