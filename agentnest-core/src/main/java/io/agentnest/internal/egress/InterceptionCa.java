package io.agentnest.internal.egress;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Date;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.GeneralSubtree;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.NameConstraints;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A sandbox's own certificate authority for the hosts whose TLS the egress proxy terminates
 * (credential rules). Its private key exists only in this object, in the host's memory: the sandbox
 * gets the certificate alone. The CA is name-constrained to those hosts, so a client that honours
 * name constraints (OpenSSL, the JDK) would reject anything else it signed, and each host's leaf
 * certificate is minted once and cached.
 *
 * <p>Thread-safe.
 */
public final class InterceptionCa {
  private static final String SIGNATURE = "SHA256withECDSA";
  private static final char[] NO_PASSWORD = new char[0];

  private final Set<String> hosts;
  private final KeyPair caKeys;
  private final X509Certificate caCert;
  private final KeyPair leafKeys;
  private final Instant notAfter;
  private final SecureRandom random = new SecureRandom();
  private final Map<String, SSLContext> contexts = new ConcurrentHashMap<>();
  private final Map<String, X509Certificate> leaves = new ConcurrentHashMap<>();

  private InterceptionCa(
      Set<String> hosts, KeyPair caKeys, X509Certificate caCert, KeyPair leafKeys, Instant end) {
    this.hosts = hosts;
    this.caKeys = caKeys;
    this.caCert = caCert;
    this.leafKeys = leafKeys;
    this.notAfter = end;
  }

  /**
   * A fresh CA for {@code hosts} (canonical names), valid from an hour ago (clock skew) for {@code
   * lifetime}.
   */
  public static InterceptionCa create(String label, Collection<String> hosts, Duration lifetime) {
    if (hosts.isEmpty()) {
      throw new IllegalArgumentException("an interception CA needs at least one host");
    }
    Set<String> names = Set.copyOf(hosts);
    try {
      KeyPair ca = ecKeys();
      KeyPair leaf = ecKeys();
      Instant start = Instant.now().minus(Duration.ofHours(1));
      Instant end = Instant.now().plus(lifetime);
      X500Name subject =
          new X500Name("CN=AgentNest sandbox CA " + sanitize(label) + ",O=AgentNest");
      X509v3CertificateBuilder b =
          new JcaX509v3CertificateBuilder(
              subject,
              serial(new SecureRandom()),
              Date.from(start),
              Date.from(end),
              subject,
              ca.getPublic());
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
      b.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      b.addExtension(
          Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(ca.getPublic()));
      GeneralSubtree[] permitted =
          names.stream()
              .sorted()
              .map(h -> new GeneralSubtree(new GeneralName(GeneralName.dNSName, h)))
              .toArray(GeneralSubtree[]::new);
      b.addExtension(Extension.nameConstraints, true, new NameConstraints(permitted, null));
      X509Certificate cert = sign(b, ca.getPrivate());
      return new InterceptionCa(names, ca, cert, leaf, end);
    } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
      throw new IllegalStateException("cannot create the sandbox's interception CA", e);
    }
  }

  /** The CA certificate (public), for the sandbox's trust store. */
  public X509Certificate certificate() {
    return caCert;
  }

  /** The CA certificate as PEM text. */
  public String certificatePem() {
    StringWriter w = new StringWriter();
    try (JcaPEMWriter pem = new JcaPEMWriter(w)) {
      pem.writeObject(caCert);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString();
  }

  /** The hosts this CA may sign for. */
  public Set<String> hosts() {
    return hosts;
  }

  /** The leaf certificate for {@code host}, minted on first use. */
  public X509Certificate leaf(String host) {
    requireHost(host);
    return leaves.computeIfAbsent(host, this::mint);
  }

  /** A server-side TLS context presenting {@code host}'s leaf (and the CA) to the sandbox. */
  public SSLContext serverContext(String host) {
    requireHost(host);
    return contexts.computeIfAbsent(host, this::context);
  }

  private void requireHost(String host) {
    if (!hosts.contains(Objects.requireNonNull(host, "host"))) {
      throw new IllegalArgumentException(
          host + " has no credential rule: its TLS is never terminated");
    }
  }

  private SSLContext context(String host) {
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      ks.setKeyEntry(
          "leaf", leafKeys.getPrivate(), NO_PASSWORD, new Certificate[] {leaf(host), caCert});
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, NO_PASSWORD);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(kmf.getKeyManagers(), null, null);
      return ctx;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot build the TLS context for " + host, e);
    }
  }

  private X509Certificate mint(String host) {
    try {
      Instant start = Instant.now().minus(Duration.ofHours(1));
      X509v3CertificateBuilder b =
          new JcaX509v3CertificateBuilder(
              caCert,
              serial(random),
              Date.from(start),
              Date.from(notAfter),
              new X500Name("CN=" + host),
              leafKeys.getPublic());
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      b.addExtension(
          Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
      b.addExtension(
          Extension.subjectAlternativeName,
          false,
          new GeneralNames(new GeneralName(GeneralName.dNSName, host)));
      b.addExtension(
          Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(caCert));
      b.addExtension(
          Extension.subjectKeyIdentifier,
          false,
          ext.createSubjectKeyIdentifier(leafKeys.getPublic()));
      return sign(b, caKeys.getPrivate());
    } catch (GeneralSecurityException | IOException | OperatorCreationException e) {
      throw new IllegalStateException("cannot mint a certificate for " + host, e);
    }
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key)
      throws OperatorCreationException, GeneralSecurityException {
    ContentSigner signer = new JcaContentSignerBuilder(SIGNATURE).build(key);
    return new JcaX509CertificateConverter().getCertificate(b.build(signer));
  }

  private static KeyPair ecKeys() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    return g.generateKeyPair();
  }

  private static BigInteger serial(SecureRandom random) {
    return new BigInteger(127, random).add(BigInteger.ONE);
  }

  /** The label goes into a distinguished name: keep it to characters that need no escaping. */
  private static String sanitize(String label) {
    String s = label.replaceAll("[^A-Za-z0-9._-]", "_");
    return s.length() > 40 ? s.substring(0, 40) : s;
  }
}
