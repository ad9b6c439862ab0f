package io.agentnest.internal.egress;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPOutputStream;
import javax.net.ssl.SSLServerSocket;

/**
 * An HTTPS server on 127.0.0.1 that reflects each request's head in its response body, framed the
 * way the path asks (as a hostile sandbox would pick an echo endpoint): {@code /chunked16} in
 * 16-byte chunks, {@code /chunked4k} in 4 KiB chunks, {@code /cut?len=N} only the first N bytes
 * (with that Content-Length), {@code /gzip} and {@code /gzip-chunked} gzip'd whatever the request
 * accepts, {@code /brotli} labelled {@code Content-Encoding: br}, anything else as is. One response
 * per connection, then close. Started and stopped by the test; loopback only.
 */
final class ReflectingOrigin implements AutoCloseable {
  private final InterceptionCa ca;
  private final SSLServerSocket server;
  private final ExecutorService workers = Executors.newFixedThreadPool(4);
  private final Thread acceptor;
  private final AtomicInteger requests = new AtomicInteger();
  private volatile String lastHead = "";

  ReflectingOrigin(String name) throws IOException {
    this.ca = InterceptionCa.create("test-reflector-" + name, List.of(name), Duration.ofDays(1));
    this.server =
        (SSLServerSocket) ca.serverContext(name).getServerSocketFactory().createServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
    this.acceptor = new Thread(this::acceptLoop, "test-reflector-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return server.getLocalPort();
  }

  X509Certificate caCertificate() {
    return ca.certificate();
  }

  /** How many complete request heads the server received. */
  int requests() {
    return requests.get();
  }

  /** The head of the last request received. */
  String lastHead() {
    return lastHead;
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket s = server.accept();
        workers.execute(() -> serve(s));
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (s) {
      s.setSoTimeout(10_000);
      InputStream in = s.getInputStream();
      String head = readHead(in);
      if (head == null) {
        return;
      }
      requests.incrementAndGet();
      lastHead = head;
      String target = head.substring(head.indexOf(' ') + 1, head.indexOf(" HTTP/"));
      URI uri = URI.create(target);
      byte[] echo = head.getBytes(StandardCharsets.ISO_8859_1);
      OutputStream out = s.getOutputStream();
      switch (uri.getPath()) {
        case "/chunked16" -> chunked(out, echo, 16, "");
        case "/chunked4k" -> chunked(out, echo, 4096, "");
        case "/cut" -> {
          int len = Integer.parseInt(uri.getQuery().substring("len=".length()));
          byte[] cut = Arrays.copyOf(echo, Math.min(len, echo.length));
          withLength(out, cut, "");
        }
        case "/gzip" -> withLength(out, gzip(echo), "Content-Encoding: gzip\r\n");
        case "/gzip-chunked" -> chunked(out, gzip(echo), 7, "Content-Encoding: gzip\r\n");
        case "/brotli" -> withLength(out, echo, "Content-Encoding: br\r\n");
        default -> withLength(out, echo, "");
      }
      out.flush();
    } catch (IOException | RuntimeException e) {
      // the test sees the failure on its side
    }
  }

  private static void withLength(OutputStream out, byte[] body, String extra) throws IOException {
    out.write(
        ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                + extra
                + "Content-Length: "
                + body.length
                + "\r\nConnection: close\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
    out.write(body);
  }

  private static void chunked(OutputStream out, byte[] body, int size, String extra)
      throws IOException {
    out.write(
        ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                + extra
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
    for (int i = 0; i < body.length; i += size) {
      int n = Math.min(size, body.length - i);
      out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      out.write(body, i, n);
      out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
    }
    out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
  }

  private static byte[] gzip(byte[] b) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (GZIPOutputStream z = new GZIPOutputStream(bytes)) {
      z.write(b);
    }
    return bytes.toByteArray();
  }

  /** The request head up to its empty line (at most 64 KiB), or null when none came. */
  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int last = 0;
    while (b.size() < 64 * 1024) {
      int c = in.read();
      if (c < 0) {
        return null;
      }
      b.write(c);
      last = (last << 8) | c;
      if (last == 0x0d0a0d0a) {
        return b.toString(StandardCharsets.ISO_8859_1);
      }
    }
    return null;
  }

  @Override
  public void close() throws IOException {
    server.close();
    workers.shutdownNow();
    try {
      acceptor.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
