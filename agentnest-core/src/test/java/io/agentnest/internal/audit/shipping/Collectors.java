package io.agentnest.internal.audit.shipping;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.BooleanSupplier;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/** Syslog collectors the tests start on loopback (ephemeral ports), and a bounded wait. */
final class Collectors {
  private Collectors() {}

  static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  /** Polls {@code cond} every 20 ms until it holds or {@code max} has passed; returns whether. */
  static boolean await(BooleanSupplier cond, Duration max) throws InterruptedException {
    long end = System.nanoTime() + max.toNanos();
    while (System.nanoTime() - end < 0) {
      if (cond.getAsBoolean()) {
        return true;
      }
      Thread.sleep(20);
    }
    return cond.getAsBoolean();
  }

  /** Receives datagrams; keeps at most 100,000 of them. */
  static final class Udp implements AutoCloseable {
    final DatagramSocket socket;
    final LinkedBlockingQueue<byte[]> received = new LinkedBlockingQueue<>(100_000);
    private final Thread reader;

    Udp() throws IOException {
      socket = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0));
      reader =
          new Thread(
              () -> {
                byte[] buf = new byte[70_000];
                while (!socket.isClosed()) {
                  DatagramPacket p = new DatagramPacket(buf, buf.length);
                  try {
                    socket.receive(p);
                  } catch (IOException e) {
                    return;
                  }
                  byte[] b = new byte[p.getLength()];
                  System.arraycopy(p.getData(), p.getOffset(), b, 0, b.length);
                  received.offer(b);
                }
              },
              "test-udp-collector");
      reader.setDaemon(true);
      reader.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    @Override
    public void close() throws InterruptedException {
      socket.close();
      reader.join(5_000);
    }
  }

  /**
   * A TCP (or TLS) collector reading octet-counted frames; {@code reading == false} accepts and
   * never reads (a stuck collector).
   */
  static final class Tcp implements AutoCloseable {
    final ServerSocket server;
    final LinkedBlockingQueue<byte[]> received = new LinkedBlockingQueue<>(100_000);
    final List<String> errors = new CopyOnWriteArrayList<>();
    private final List<Socket> accepted = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    Tcp(int port, boolean reading) throws IOException {
      this(newServer(null, port), reading);
    }

    Tcp(SSLContext tls) throws IOException {
      this(newServer(tls, 0), true);
    }

    private static ServerSocket newServer(SSLContext tls, int port) throws IOException {
      ServerSocket s =
          tls == null ? new ServerSocket() : tls.getServerSocketFactory().createServerSocket();
      s.setReuseAddress(true);
      s.setReceiveBufferSize(4096);
      s.bind(new InetSocketAddress(LOOPBACK, port));
      return s;
    }

    private Tcp(ServerSocket server, boolean reading) {
      this.server = server;
      Thread acceptor =
          new Thread(
              () -> {
                for (int i = 0; i < 100 && !server.isClosed(); i++) {
                  Socket s;
                  try {
                    s = server.accept();
                  } catch (IOException e) {
                    return;
                  }
                  accepted.add(s);
                  if (reading) {
                    Thread t = new Thread(() -> read(s), "test-tcp-collector-conn");
                    t.setDaemon(true);
                    t.start();
                  }
                }
              },
              "test-tcp-collector");
      acceptor.setDaemon(true);
      acceptor.start();
      threads.add(acceptor);
    }

    private void read(Socket s) {
      try (InputStream in = s.getInputStream()) {
        for (int i = 0; i < 1_000_000; i++) {
          byte[] f = SyslogFrames.readFrame(in);
          if (f == null) {
            return;
          }
          received.offer(f);
        }
      } catch (SocketException closed) {
        // The test closed the collector.
      } catch (IOException e) {
        errors.add(e.toString());
      }
    }

    int port() {
      return server.getLocalPort();
    }

    int connections() {
      return accepted.size();
    }

    @Override
    public void close() throws Exception {
      server.close();
      for (Socket s : accepted) {
        s.close();
      }
      for (Thread t : threads) {
        t.join(5_000);
      }
    }
  }

  /** A self-signed certificate naming {@code san} (an IP address or a DNS name), and its key. */
  record Cert(X509Certificate cert, KeyPair key) {
    static Cert selfSigned(String san) throws Exception {
      KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
      g.initialize(256);
      KeyPair kp = g.generateKeyPair();
      X500Name name = new X500Name("CN=test collector");
      long now = System.currentTimeMillis();
      JcaX509v3CertificateBuilder b =
          new JcaX509v3CertificateBuilder(
              name,
              BigInteger.valueOf(now),
              new Date(now - 60_000),
              new Date(now + 3_600_000),
              name,
              kp.getPublic());
      int kind = san.matches("[0-9.]+") ? GeneralName.iPAddress : GeneralName.dNSName;
      b.addExtension(
          Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(kind, san)));
      X509Certificate c =
          new JcaX509CertificateConverter()
              .getCertificate(
                  b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(kp.getPrivate())));
      return new Cert(c, kp);
    }

    SSLContext serverContext() throws Exception {
      char[] pw = "test".toCharArray();
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      ks.setKeyEntry("collector", key.getPrivate(), pw, new Certificate[] {cert});
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, pw);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(kmf.getKeyManagers(), null, null);
      return ctx;
    }

    KeyStore trustStore() throws Exception {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      ks.setCertificateEntry("collector", cert);
      return ks;
    }
  }
}
