package io.agentnest.internal.egress;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPOutputStream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.jspecify.annotations.Nullable;

/**
 * An HTTPS server on 127.0.0.1 with a CA of its own, standing in for a real API in the egress
 * benchmark and in tests: {@code /whoami} answers 200 only with the expected bearer token, {@code
 * /echo} returns the request's headers ({@code /echo-chunked16} in 16-byte chunks, {@code
 * /echo-gzip} gzip'd whatever the request accepts: a reflecting host), {@code /bytes?n=N} and
 * {@code /chunked?n=N} return N bytes (with a length, or chunked), {@code POST /upload} answers the
 * number of body bytes it read, and {@code /<repo>/info/refs?service=git-upload-pack} answers Git's
 * smart-HTTP ref advertisement ({@link #GIT_COMMIT} as HEAD and refs/heads/main) only with the
 * expected bearer token. Every request's headers are kept for inspection. Never reachable from a
 * sandbox except through a test-only resolver.
 */
public final class LoopbackHttpsOrigin implements AutoCloseable {
  private static final int MAX_N = 1 << 30;

  static {
    // The JDK's server leaves Nagle on by default: its handshake messages, written one by one,
    // would wait for delayed ACKs (tens of ms a connection), which no real API server does.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
  }

  /** The commit the Git endpoint advertises. */
  public static final String GIT_COMMIT = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

  private final HttpsServer server;
  private final ExecutorService executor;
  private final InterceptionCa ca;
  private final @Nullable String expectedToken;
  private final LinkedBlockingQueue<Map<String, List<String>>> seen = new LinkedBlockingQueue<>();

  /**
   * @param name the name its certificate is for (a test name the resolver maps to loopback)
   * @param certificateName the name actually in its certificate ({@code name} for a good one)
   * @param expectedToken the bearer token {@code /whoami} accepts; null accepts none
   */
  public LoopbackHttpsOrigin(String name, String certificateName, @Nullable String expectedToken)
      throws IOException {
    // Named after the origin: CAs of one name would make a client try the wrong one's key.
    this.ca =
        InterceptionCa.create("test-origin-" + name, List.of(certificateName), Duration.ofDays(1));
    this.expectedToken = expectedToken;
    this.server =
        HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.setHttpsConfigurator(new HttpsConfigurator(ca.serverContext(certificateName)));
    server.createContext("/", this::handle);
    this.executor = Executors.newFixedThreadPool(8);
    server.setExecutor(executor);
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** The origin's CA certificate (to trust it upstream, in tests). */
  public X509Certificate caCertificate() {
    return ca.certificate();
  }

  /** A client context trusting only this origin's CA. */
  public SSLContext trustingContext() {
    return trusting(ca.certificate());
  }

  /** A client TLS context that trusts exactly {@code certificates}. */
  public static SSLContext trusting(X509Certificate... certificates) {
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      for (int i = 0; i < certificates.length; i++) {
        ks.setCertificateEntry("ca" + i, certificates[i]);
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (Exception e) {
      throw new IllegalStateException("cannot build a test trust context", e);
    }
  }

  /** The headers of the next request the origin served (waiting up to {@code timeout}). */
  public @Nullable Map<String, List<String>> nextRequestHeaders(Duration timeout)
      throws InterruptedException {
    return seen.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * The values of header {@code name} in the next request that carried it (requests without it are
   * skipped); empty when none came within {@code timeout}.
   */
  public List<String> nextRequestHeadersMatching(String name, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return List.of();
      }
      Map<String, List<String>> h = seen.poll(left, TimeUnit.NANOSECONDS);
      if (h == null) {
        return List.of();
      }
      List<String> v = h.get(name);
      if (v != null) {
        return v;
      }
    }
  }

  private void handle(HttpExchange x) throws IOException {
    try (x) {
      Map<String, List<String>> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      x.getRequestHeaders().forEach((k, v) -> headers.put(k, List.copyOf(v)));
      seen.offer(headers);
      String path = x.getRequestURI().getPath();
      String query = x.getRequestURI().getQuery();
      long read = drain(x.getRequestBody());
      switch (path) {
        case "/whoami" -> {
          String auth = x.getRequestHeaders().getFirst("Authorization");
          boolean ok = expectedToken != null && ("Bearer " + expectedToken).equals(auth);
          send(x, ok ? 200 : 401, ok ? "hello, authenticated caller\n" : "no valid token\n");
        }
        case "/echo", "/echo-chunked16", "/echo-gzip" -> {
          StringBuilder sb = new StringBuilder();
          headers.forEach(
              (k, v) -> v.forEach(s -> sb.append(k).append(": ").append(s).append('\n')));
          byte[] b = sb.toString().getBytes(StandardCharsets.UTF_8);
          if (path.equals("/echo-chunked16")) {
            x.sendResponseHeaders(200, 0);
            OutputStream out = x.getResponseBody();
            for (int i = 0; i < b.length; i += 16) {
              out.write(b, i, Math.min(16, b.length - i));
              out.flush(); // one chunk per write
            }
          } else if (path.equals("/echo-gzip")) {
            ByteArrayOutputStream z = new ByteArrayOutputStream();
            try (GZIPOutputStream g = new GZIPOutputStream(z)) {
              g.write(b);
            }
            x.getResponseHeaders().set("Content-Encoding", "gzip");
            x.sendResponseHeaders(200, z.size());
            x.getResponseBody().write(z.toByteArray());
          } else {
            send(x, 200, sb.toString());
          }
        }
        case "/bytes", "/chunked" -> {
          long n = size(query);
          x.sendResponseHeaders(200, path.equals("/chunked") ? 0 : (n == 0 ? -1 : n));
          try (OutputStream out = x.getResponseBody()) {
            byte[] block = new byte[64 * 1024];
            Arrays.fill(block, (byte) 'x');
            long left = n;
            while (left > 0) {
              int k = (int) Math.min(block.length, left);
              out.write(block, 0, k);
              left -= k;
            }
          }
        }
        case "/upload" -> send(x, 200, "read " + read + " bytes\n");
        default -> {
          if (path.endsWith("/info/refs") && "service=git-upload-pack".equals(query)) {
            gitRefs(x);
          } else {
            send(x, 404, "no such path\n");
          }
        }
      }
    }
  }

  /** Git's smart-HTTP advertisement (protocol v0), for an authenticated caller only. */
  private void gitRefs(HttpExchange x) throws IOException {
    String auth = x.getRequestHeaders().getFirst("Authorization");
    if (expectedToken == null || !("Bearer " + expectedToken).equals(auth)) {
      send(x, 401, "no valid token\n");
      return;
    }
    String body =
        pkt("# service=git-upload-pack\n")
            + "0000"
            + pkt(GIT_COMMIT + " HEAD\0symref=HEAD:refs/heads/main agent=agentnest-test\n")
            + pkt(GIT_COMMIT + " refs/heads/main\n")
            + "0000";
    byte[] b = body.getBytes(StandardCharsets.ISO_8859_1);
    x.getResponseHeaders().set("Content-Type", "application/x-git-upload-pack-advertisement");
    x.getResponseHeaders().set("Cache-Control", "no-cache");
    x.sendResponseHeaders(200, b.length);
    x.getResponseBody().write(b);
  }

  private static String pkt(String line) {
    return String.format("%04x", line.length() + 4) + line;
  }

  private static long size(@Nullable String query) {
    if (query == null || !query.startsWith("n=")) {
      return 0;
    }
    try {
      return Math.max(0, Math.min(MAX_N, Long.parseLong(query.substring(2))));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static long drain(InputStream in) throws IOException {
    byte[] buf = new byte[64 * 1024];
    long total = 0;
    int n;
    while ((n = in.read(buf)) >= 0) {
      total += n;
    }
    return total;
  }

  private static void send(HttpExchange x, int status, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    x.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
    if (b.length > 0) {
      x.getResponseBody().write(b);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
