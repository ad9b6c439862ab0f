package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/** A client's TLS connection through the proxy's CONNECT, as sandbox code would open one. */
final class TlsTunnels {
  private TlsTunnels() {}

  /**
   * CONNECTs to {@code host:port} through the proxy on loopback {@code proxyPort}, expects 200,
   * then shakes hands trusting only {@code ca} (the sandbox CA) with SNI and host-name checks.
   */
  static SSLSocket open(int proxyPort, String host, int port, X509Certificate ca, Duration wait)
      throws IOException {
    Socket raw = new Socket(InetAddress.getLoopbackAddress(), proxyPort);
    try {
      raw.setSoTimeout((int) wait.toMillis());
      String target = host + ":" + port;
      raw.getOutputStream()
          .write(
              ("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                  .getBytes(StandardCharsets.ISO_8859_1));
      InputStream in = raw.getInputStream();
      StringBuilder head = new StringBuilder();
      // Bounded: at most 4 KiB of head, and every read by the socket's timeout.
      while (!head.toString().endsWith("\r\n\r\n") && head.length() < 4096) {
        int b = in.read();
        if (b < 0) {
          break;
        }
        head.append((char) b);
      }
      assertThat(head.toString()).startsWith("HTTP/1.1 200");
      SSLSocket s =
          (SSLSocket)
              LoopbackHttpsOrigin.trusting(ca)
                  .getSocketFactory()
                  .createSocket(raw, host, port, true);
      SSLParameters p = s.getSSLParameters();
      p.setServerNames(List.of(new SNIHostName(host)));
      p.setEndpointIdentificationAlgorithm("HTTPS");
      s.setSSLParameters(p);
      s.startHandshake();
      return s;
    } catch (IOException | RuntimeException | Error e) {
      raw.close();
      throw e;
    }
  }
}
