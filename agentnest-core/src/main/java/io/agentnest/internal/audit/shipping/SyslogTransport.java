package io.agentnest.internal.audit.shipping;

import io.agentnest.audit.SyslogTarget;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.GeneralSecurityException;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.jspecify.annotations.Nullable;

/**
 * Syslog over UDP (RFC 5426: one message per datagram), TCP (RFC 6587 octet counting) or TLS (RFC
 * 5425: octet counting inside TLS, the certificate checked against the trust store and the host
 * name, never trust-all).
 *
 * <p>A TCP write to a collector that has gone away may still succeed once (the kernel buffers it):
 * before each batch the connection is probed with a 1 ms read (collectors never write, so end of
 * stream means closed), which catches a collector that closed or restarted. UDP cannot tell: a
 * datagram to a dead collector is lost without trace unless the host answers with ICMP port
 * unreachable.
 */
final class SyslogTransport implements Transport {
  private final SyslogTarget target;
  private final SyslogFormat format;
  private volatile @Nullable Socket socket;
  private volatile @Nullable OutputStream out;
  private volatile @Nullable InputStream in;
  private volatile @Nullable DatagramSocket udp;

  SyslogTransport(SyslogTarget target, SyslogFormat format) {
    this.target = target;
    this.format = format;
  }

  @Override
  public void open() throws IOException {
    close();
    InetSocketAddress addr = new InetSocketAddress(target.host(), target.port());
    if (addr.isUnresolved()) {
      throw new IOException("cannot resolve syslog host " + target.host());
    }
    int timeout = (int) Math.min(Integer.MAX_VALUE, target.connectTimeout().toMillis());
    if (target.transport() == SyslogTarget.Transport.UDP) {
      DatagramSocket d = new DatagramSocket();
      d.connect(addr);
      udp = d;
      return;
    }
    Socket s = new Socket();
    try {
      s.connect(addr, timeout);
      s.setKeepAlive(true);
      if (target.transport() == SyslogTarget.Transport.TLS) {
        SSLSocket tls =
            (SSLSocket)
                sslContext().getSocketFactory().createSocket(s, target.host(), target.port(), true);
        SSLParameters p = tls.getSSLParameters();
        // Host name verification as for HTTPS: the certificate must name the host we dialled.
        p.setEndpointIdentificationAlgorithm("HTTPS");
        tls.setSSLParameters(p);
        tls.setSoTimeout(timeout);
        tls.startHandshake();
        tls.setSoTimeout(0);
        s = tls;
      }
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
    socket = s;
    out = new BufferedOutputStream(s.getOutputStream(), 1 << 16);
    in = s.getInputStream();
  }

  private SSLContext sslContext() throws IOException {
    try {
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(target.trustStore());
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (GeneralSecurityException e) {
      throw new IOException(
          "cannot set up TLS for " + target.describe() + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void send(List<Shipment> batch, @Nullable Gap gap) throws IOException {
    int max = target.maxMessageBytes();
    DatagramSocket d = udp;
    if (d != null) {
      if (gap != null) {
        datagram(d, format.gap(gap, max));
      }
      for (Shipment s : batch) {
        datagram(d, format.message(s, max));
      }
      return;
    }
    Socket s = socket;
    OutputStream o = out;
    if (s == null || o == null) {
      throw new IOException("not connected to " + target.describe());
    }
    probe(s);
    if (gap != null) {
      o.write(SyslogFormat.octetCounted(format.gap(gap, max)));
    }
    for (Shipment sh : batch) {
      o.write(SyslogFormat.octetCounted(format.message(sh, max)));
    }
    o.flush();
  }

  private static void datagram(DatagramSocket d, byte[] msg) throws IOException {
    d.send(new DatagramPacket(msg, msg.length));
  }

  private void probe(Socket s) throws IOException {
    InputStream i = in;
    if (i == null) {
      return;
    }
    s.setSoTimeout(1);
    try {
      if (i.read() < 0) {
        throw new IOException("the collector closed the connection");
      }
      // A collector that talks back is not following RFC 5425/6587; its bytes are ignored.
    } catch (SocketTimeoutException alive) {
      // Nothing to read and not closed: the connection is up.
    } finally {
      s.setSoTimeout(0);
    }
  }

  @Override
  public void close() {
    Socket s = socket;
    socket = null;
    out = null;
    in = null;
    if (s != null) {
      try {
        s.close();
      } catch (IOException ignored) {
        // Already broken: nothing more to release.
      }
    }
    DatagramSocket d = udp;
    udp = null;
    if (d != null) {
      d.close();
    }
  }
}
