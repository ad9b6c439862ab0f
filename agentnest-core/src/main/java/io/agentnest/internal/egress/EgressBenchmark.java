package io.agentnest.internal.egress;

import io.agentnest.NetworkPolicy;
import io.agentnest.spi.support.Percentiles;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Measures the egress proxy on loopback: download throughput through a CONNECT tunnel against a
 * direct connection, and the latency of a small GET directly, through plain HTTP proxying and
 * through a CONNECT tunnel. Everything runs on 127.0.0.1 with bounded timeouts.
 *
 * <pre>
 * java -cp agentnest-core/target/classes:$(deps) io.agentnest.internal.egress.EgressBenchmark [iterations] [bodyBytes]
 * </pre>
 */
public final class EgressBenchmark {
  /** Keys of {@link #run}'s result. */
  public static final String DOWNLOAD_DIRECT = "download.direct.MBps";

  public static final String DOWNLOAD_CONNECT = "download.connect.MBps";
  public static final String GET_DIRECT = "get.direct.ms";
  public static final String GET_PROXY = "get.proxy.ms";
  public static final String GET_CONNECT = "get.connect.ms";

  private static final String HOST = "bench.test";
  private static final int SO_TIMEOUT_MS = 30_000;
  private static final int WARMUP = 3;

  private EgressBenchmark() {}

  /**
   * Runs {@code iterations} measurements of each kind (after a short warm-up) and returns the
   * samples: MB/s (10^6 bytes per second) for downloads of {@code bodyBytes}, milliseconds for the
   * small GETs.
   */
  public static Map<String, double[]> run(int iterations, long bodyBytes) throws IOException {
    if (iterations < 1 || iterations > 10_000) {
      throw new IllegalArgumentException("iterations must be in [1, 10000], got " + iterations);
    }
    if (bodyBytes < 1 || bodyBytes > (8L << 30)) {
      throw new IllegalArgumentException("bodyBytes must be in [1, 8 GiB], got " + bodyBytes);
    }
    try (Origin origin = new Origin(bodyBytes)) {
      NetworkPolicy policy =
          NetworkPolicy.builder()
              .allow(HOST + ":" + origin.port())
              .allowAddress("127.0.0.0/8")
              .build();
      AtomicLong events = new AtomicLong();
      EgressProxy proxy =
          new EgressProxy(
              policy,
              StaticResolver.of(HOST, "127.0.0.1"),
              e -> events.incrementAndGet(),
              null,
              "bench");
      try (LoopbackProxyServer server = new LoopbackProxyServer(proxy)) {
        Client c = new Client(origin.port(), server.port(), bodyBytes);
        for (int i = 0; i < WARMUP; i++) {
          c.downloadDirect();
          c.downloadConnect();
          c.getDirect();
          c.getProxy();
          c.getConnect();
        }
        double[] dd = new double[iterations];
        double[] dc = new double[iterations];
        double[] gd = new double[iterations];
        double[] gp = new double[iterations];
        double[] gc = new double[iterations];
        for (int i = 0; i < iterations; i++) {
          dd[i] = c.downloadDirect();
          dc[i] = c.downloadConnect();
          gd[i] = c.getDirect();
          gp[i] = c.getProxy();
          gc[i] = c.getConnect();
        }
        Map<String, double[]> out = new LinkedHashMap<>();
        out.put(DOWNLOAD_DIRECT, dd);
        out.put(DOWNLOAD_CONNECT, dc);
        out.put(GET_DIRECT, gd);
        out.put(GET_PROXY, gp);
        out.put(GET_CONNECT, gc);
        return out;
      }
    }
  }

  public static void main(String[] args) throws IOException {
    int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    long bodyBytes = args.length > 1 ? Long.parseLong(args[1]) : 32L << 20;
    Map<String, double[]> results = run(iterations, bodyBytes);
    System.out.printf(
        Locale.ROOT,
        "egress proxy on loopback: %d iterations, body %d bytes%n%-24s %12s %12s%n",
        iterations,
        bodyBytes,
        "measure",
        "p50",
        "p95");
    results.forEach(
        (name, samples) ->
            System.out.printf(
                Locale.ROOT,
                "%-24s %12.2f %12.2f%n",
                name,
                Percentiles.nearestRank(samples, 50),
                Percentiles.nearestRank(samples, 95)));
  }

  private static final class Client {
    final int originPort;
    final int proxyPort;
    final long bodyBytes;
    final byte[] buf = new byte[64 * 1024];

    Client(int originPort, int proxyPort, long bodyBytes) {
      this.originPort = originPort;
      this.proxyPort = proxyPort;
      this.bodyBytes = bodyBytes;
    }

    double downloadDirect() throws IOException {
      long t0 = System.nanoTime();
      try (Socket s = open(originPort)) {
        request(s, "/big");
        readAll(s.getInputStream(), bodyBytes);
      }
      return bodyBytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
    }

    double downloadConnect() throws IOException {
      long t0 = System.nanoTime();
      try (Socket s = open(proxyPort)) {
        tunnel(s);
        request(s, "/big");
        readAll(s.getInputStream(), bodyBytes);
      }
      return bodyBytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
    }

    double getDirect() throws IOException {
      long t0 = System.nanoTime();
      try (Socket s = open(originPort)) {
        request(s, "/small");
        readAll(s.getInputStream(), 2);
      }
      return (System.nanoTime() - t0) / 1e6;
    }

    double getProxy() throws IOException {
      long t0 = System.nanoTime();
      try (Socket s = open(proxyPort)) {
        String target = HOST + ":" + originPort;
        write(s, "GET http://" + target + "/small HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
        readAll(s.getInputStream(), 2);
      }
      return (System.nanoTime() - t0) / 1e6;
    }

    double getConnect() throws IOException {
      long t0 = System.nanoTime();
      try (Socket s = open(proxyPort)) {
        tunnel(s);
        request(s, "/small");
        readAll(s.getInputStream(), 2);
      }
      return (System.nanoTime() - t0) / 1e6;
    }

    private Socket open(int port) throws IOException {
      Socket s = new Socket();
      s.setTcpNoDelay(true);
      s.setSoTimeout(SO_TIMEOUT_MS);
      s.connect(new InetSocketAddress(loopback(), port), SO_TIMEOUT_MS);
      return s;
    }

    private void tunnel(Socket s) throws IOException {
      // To the address, which the policy allows by range: its tunnel is opaque, so the measure
      // is the tunnel's own cost (a tunnel to a name must carry TLS, checked by its SNI).
      String target = "127.0.0.1:" + originPort;
      write(s, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
      String head = readHead(s.getInputStream());
      if (!head.startsWith("HTTP/1.1 200")) {
        throw new IOException("proxy refused the tunnel: " + head);
      }
    }

    private void request(Socket s, String path) throws IOException {
      write(s, "GET " + path + " HTTP/1.1\r\nHost: " + HOST + ":" + originPort + "\r\n\r\n");
    }

    private static void write(Socket s, String text) throws IOException {
      OutputStream out = s.getOutputStream();
      out.write(text.getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
    }

    /** Reads the response to its end and checks that the body had the expected size. */
    private void readAll(InputStream in, long expectedBody) throws IOException {
      String head = readHead(in);
      if (!head.startsWith("HTTP/1.1 200")) {
        throw new IOException("unexpected response: " + head);
      }
      long total = 0;
      int n;
      while ((n = in.read(buf)) >= 0) {
        total += n;
      }
      if (total != expectedBody) {
        throw new IOException("expected " + expectedBody + " body bytes, got " + total);
      }
    }
  }

  /** Reads up to the blank line ending a response head (bounded to 16 KiB). */
  static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream(256);
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("connection closed in the response head: " + head);
      }
      head.write(b);
      if (head.size() > 16 * 1024) {
        throw new IOException("response head too long");
      }
      matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }

  static InetAddress loopback() throws IOException {
    return InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
  }

  /** A minimal HTTP origin on loopback: {@code /big} streams the body, anything else "ok". */
  private static final class Origin implements AutoCloseable {
    private final ServerSocket server;
    private final ExecutorService pool = Executors.newFixedThreadPool(4, daemon());
    private final Thread acceptor;
    private final long bodyBytes;

    Origin(long bodyBytes) throws IOException {
      this.bodyBytes = bodyBytes;
      this.server = new ServerSocket();
      server.bind(new InetSocketAddress(loopback(), 0), 64);
      this.acceptor = new Thread(this::accept, "egress-bench-origin");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    int port() {
      return server.getLocalPort();
    }

    private void accept() {
      while (!server.isClosed()) {
        try {
          Socket s = server.accept();
          pool.execute(() -> serve(s));
        } catch (IOException e) {
          return;
        } catch (RejectedExecutionException e) {
          return;
        }
      }
    }

    private void serve(Socket s) {
      try (s) {
        s.setTcpNoDelay(true);
        s.setSoTimeout(SO_TIMEOUT_MS);
        String head = readHead(s.getInputStream());
        boolean big = head.startsWith("GET /big ");
        long length = big ? bodyBytes : 2;
        OutputStream out = s.getOutputStream();
        out.write(
            ("HTTP/1.1 200 OK\r\nContent-Length: "
                    + length
                    + "\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        if (big) {
          byte[] chunk = new byte[64 * 1024];
          Arrays.fill(chunk, (byte) 'x');
          long left = length;
          while (left > 0) {
            int n = (int) Math.min(chunk.length, left);
            out.write(chunk, 0, n);
            left -= n;
          }
        } else {
          out.write("ok".getBytes(StandardCharsets.ISO_8859_1));
        }
        out.flush();
        s.shutdownOutput();
        // Wait for the client to close, so the client never sees a reset.
        InputStream in = s.getInputStream();
        byte[] sink = new byte[1024];
        while (in.read(sink) >= 0) {
          // discard
        }
      } catch (IOException e) {
        // client went away
      }
    }

    @Override
    public void close() {
      try {
        server.close();
      } catch (IOException e) {
        // closing anyway
      }
      pool.shutdownNow();
      try {
        pool.awaitTermination(5, TimeUnit.SECONDS);
        acceptor.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    private static ThreadFactory daemon() {
      return r -> {
        Thread t = new Thread(r, "egress-bench-origin-worker");
        t.setDaemon(true);
        return t;
      };
    }
  }
}
