package io.agentnest.internal.egress;

import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * {@code agentnest bench --only egress-intercept}: an HTTPS GET through an opaque CONNECT tunnel
 * against one through a tunnel the proxy intercepts (TLS terminated, header injected, TLS to the
 * origin), each on a new connection, and download throughput through an intercepted connection. All
 * on loopback, against an HTTPS origin with a CA of its own.
 */
public final class InterceptBenchmark {
  public static final String GET_OPAQUE = "get.opaque.ms";
  public static final String GET_INTERCEPTED = "get.intercepted.ms";
  public static final String DOWNLOAD_INTERCEPTED = "download.intercepted.MBps";

  private static final String TOKEN = "bench-token-0123456789abcdef";
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private static final int WARMUP = 5;

  private InterceptBenchmark() {}

  /** {@code iterations} GETs of each kind and {@code downloads} downloads of {@code bodyBytes}. */
  public static Map<String, double[]> run(int iterations, int downloads, long bodyBytes)
      throws IOException {
    if (iterations < 1 || iterations > 10_000 || downloads < 1 || downloads > 1_000) {
      throw new IllegalArgumentException("iterations in [1, 10000], downloads in [1, 1000]");
    }
    if (bodyBytes < 1 || bodyBytes > (1L << 30)) {
      throw new IllegalArgumentException("bodyBytes must be in [1, 1 GiB], got " + bodyBytes);
    }
    try (LoopbackHttpsOrigin intercepted =
            new LoopbackHttpsOrigin("intercepted.test", "intercepted.test", TOKEN);
        LoopbackHttpsOrigin opaque = new LoopbackHttpsOrigin("opaque.test", "opaque.test", null)) {
      NetworkPolicy policy =
          NetworkPolicy.allow(
                  "intercepted.test:" + intercepted.port(), "opaque.test:" + opaque.port())
              .allowAddress("127.0.0.0/8")
              .inject("intercepted.test", Header.bearer(Secret.named("BENCH_TOKEN", TOKEN)))
              .build();
      Interception interception =
          Interception.forPolicy(
                  policy,
                  "bench",
                  Duration.ofHours(1),
                  LoopbackHttpsOrigin.trusting(intercepted.caCertificate()))
              .orElseThrow();
      EgressProxy proxy =
          new EgressProxy(
              policy,
              StaticResolver.of("intercepted.test", "127.0.0.1").with("opaque.test", "127.0.0.1"),
              e -> {},
              null,
              "bench",
              interception,
              CredentialAudit.NONE);
      try (LoopbackProxyServer server = new LoopbackProxyServer(proxy)) {
        SSLContext sandboxTrust = LoopbackHttpsOrigin.trusting(interception.ca().certificate());
        SSLContext originTrust = opaque.trustingContext();
        URI in = URI.create("https://intercepted.test:" + intercepted.port() + "/whoami");
        URI op = URI.create("https://opaque.test:" + opaque.port() + "/echo");
        for (int i = 0; i < WARMUP; i++) {
          get(server.port(), sandboxTrust, in);
          get(server.port(), originTrust, op);
        }
        double[] o = new double[iterations];
        double[] x = new double[iterations];
        for (int i = 0; i < iterations; i++) {
          o[i] = get(server.port(), originTrust, op);
          x[i] = get(server.port(), sandboxTrust, in);
        }
        double[] d = new double[downloads];
        HttpClient kept = client(server.port(), sandboxTrust);
        URI big =
            URI.create("https://intercepted.test:" + intercepted.port() + "/bytes?n=" + bodyBytes);
        download(kept, big, bodyBytes);
        for (int i = 0; i < downloads; i++) {
          long t0 = System.nanoTime();
          download(kept, big, bodyBytes);
          d[i] = bodyBytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
        }
        Map<String, double[]> out = new LinkedHashMap<>();
        out.put(GET_OPAQUE, o);
        out.put(GET_INTERCEPTED, x);
        out.put(DOWNLOAD_INTERCEPTED, d);
        return out;
      } finally {
        proxy.close();
      }
    }
  }

  /**
   * One GET on a new connection, in milliseconds: CONNECT, TLS handshake (verifying the name),
   * request with {@code Connection: close}, the whole response, close.
   */
  private static double get(int proxyPort, SSLContext trust, URI uri) throws IOException {
    long t0 = System.nanoTime();
    try (Socket s = new Socket()) {
      s.setTcpNoDelay(true);
      s.setSoTimeout((int) TIMEOUT.toMillis());
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), proxyPort));
      String authority = uri.getHost() + ":" + uri.getPort();
      OutputStream out = s.getOutputStream();
      out.write(
          ("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      String head = readHead(in);
      if (!head.startsWith("HTTP/1.1 200")) {
        throw new IOException("CONNECT " + authority + " answered " + head);
      }
      SSLSocket tls =
          (SSLSocket) trust.getSocketFactory().createSocket(s, uri.getHost(), uri.getPort(), true);
      SSLParameters p = tls.getSSLParameters();
      p.setEndpointIdentificationAlgorithm("HTTPS");
      p.setServerNames(List.of(new SNIHostName(uri.getHost())));
      tls.setSSLParameters(p);
      tls.startHandshake();
      tls.getOutputStream()
          .write(
              ("GET "
                      + uri.getRawPath()
                      + " HTTP/1.1\r\nHost: "
                      + authority
                      + "\r\nConnection: close\r\n\r\n")
                  .getBytes(StandardCharsets.US_ASCII));
      tls.getOutputStream().flush();
      byte[] response = tls.getInputStream().readAllBytes();
      String text = new String(response, StandardCharsets.ISO_8859_1);
      if (!text.startsWith("HTTP/1.1 200")) {
        throw new IOException("GET " + uri + " answered " + text.lines().findFirst().orElse(""));
      }
    }
    return (System.nanoTime() - t0) / 1e6;
  }

  private static String readHead(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    while (sb.length() < 8192 && !sb.toString().endsWith("\r\n\r\n")) {
      int c = in.read();
      if (c < 0) {
        break;
      }
      sb.append((char) c);
    }
    return sb.toString();
  }

  private static void download(HttpClient c, URI uri, long bodyBytes) throws IOException {
    HttpResponse<InputStream> r = send(c, uri, HttpResponse.BodyHandlers.ofInputStream());
    long total = 0;
    try (InputStream in = r.body()) {
      byte[] buf = new byte[256 * 1024];
      int n;
      while ((n = in.read(buf)) >= 0) {
        total += n;
      }
    }
    if (total != bodyBytes) {
      throw new IOException("downloaded " + total + " bytes of " + bodyBytes);
    }
  }

  private static <T> HttpResponse<T> send(HttpClient c, URI uri, HttpResponse.BodyHandler<T> h)
      throws IOException {
    try {
      return c.send(HttpRequest.newBuilder(uri).timeout(TIMEOUT).build(), h);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  private static HttpClient client(int proxyPort, SSLContext trust) {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", proxyPort)))
        .sslContext(trust)
        .connectTimeout(TIMEOUT)
        .build();
  }
}
