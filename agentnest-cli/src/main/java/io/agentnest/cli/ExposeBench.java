package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.ExecOptions;
import io.agentnest.Exposed;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import me.tongfei.progressbar.ProgressBar;

/**
 * {@code bench --only expose}: what {@link Sandbox#expose} adds to a request. The same
 * standard-library Python echo server runs on the host's loopback ("direct") and inside a sandbox
 * (reached through expose); a 64-byte request and its echo are timed on a kept connection, and with
 * a new connection per request. The overhead is the difference of the p50s.
 */
final class ExposeBench {
  static final int PORT = 8765;
  private static final int SO_TIMEOUT_MS = 30_000;

  /** Serves until its deadline or its stdin closes; prints its port once listening. */
  static final String ECHO =
      "import socket, sys, threading, time\n"
          + "deadline = time.time() + 1800\n"
          + "srv = socket.socket()\n"
          + "srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          + "srv.bind(('127.0.0.1', int(sys.argv[1])))\n"
          + "srv.listen(128)\n"
          + "print(srv.getsockname()[1], flush=True)\n"
          + "def echo(c):\n"
          + "    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n"
          + "    while time.time() < deadline:\n"
          + "        d = c.recv(65536)\n"
          + "        if not d: break\n"
          + "        c.sendall(d)\n"
          + "    c.close()\n"
          + "while time.time() < deadline:\n"
          + "    c, _ = srv.accept()\n"
          + "    threading.Thread(target=echo, args=(c,), daemon=True).start()\n";

  private ExposeBench() {}

  static void run(SandboxConfig config, int iterations, int warmup, Map<String, double[]> samples) {
    Process host = startHostServer();
    try (Sandbox sb = Sandbox.create(config)) {
      int direct = readPort(host);
      sb.files().write("echo_server.py", ECHO);
      sb.start(
          List.of("python3", "echo_server.py", String.valueOf(PORT)),
          ExecOptions.builder().timeout(Duration.ofMinutes(30)).build());
      BenchCommand.check(
          sb.runCode(
              "import socket, time\nd = time.time() + 20\nwhile True:\n    try:\n"
                  + "        socket.create_connection(('127.0.0.1', "
                  + PORT
                  + "), 1).close(); break\n"
                  + "    except OSError:\n"
                  + "        if time.time() > d: raise\n"
                  + "        time.sleep(0.05)\n'up'"),
          "'up'");
      try (Exposed exposed = sb.expose(PORT)) {
        samples.put("expose: echo direct (host loopback)", kept(direct, iterations, warmup));
        samples.put("expose: echo through expose", kept(exposed.port(), iterations, warmup));
        samples.put("expose: connect+echo direct", fresh(direct, iterations, warmup));
        samples.put(
            "expose: connect+echo through expose", fresh(exposed.port(), iterations, warmup));
      }
    } finally {
      host.destroyForcibly();
    }
  }

  private static Process startHostServer() {
    try {
      Process p = new ProcessBuilder("python3", "-c", ECHO, "0").redirectErrorStream(true).start();
      return p;
    } catch (IOException e) {
      throw new AgentNestException(
          "bench --only expose needs python3 on the host for its direct baseline: "
              + e.getMessage(),
          e);
    }
  }

  private static int readPort(Process p) {
    try {
      byte[] line = new byte[16];
      InputStream in = p.getInputStream();
      int n = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (n < line.length && System.nanoTime() < deadline) {
        int b = in.read();
        if (b < 0 || b == '\n') {
          break;
        }
        line[n++] = (byte) b;
      }
      return Integer.parseInt(new String(line, 0, n, StandardCharsets.US_ASCII).strip());
    } catch (IOException | NumberFormatException e) {
      throw new AgentNestException("the host echo server did not start: " + e, e);
    }
  }

  /** Request and echo on one connection kept open. */
  private static double[] kept(int port, int iterations, int warmup) {
    byte[] msg = new byte[64];
    byte[] back = new byte[64];
    double[] ms = new double[iterations];
    try (Socket s = connect(port);
        ProgressBar pb = Progress.bar("expose :" + port, iterations)) {
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      for (int i = 0; i < warmup + iterations; i++) {
        long t0 = System.nanoTime();
        out.write(msg);
        out.flush();
        readFully(in, back);
        if (i >= warmup) {
          ms[i - warmup] = (System.nanoTime() - t0) / 1e6;
          pb.step();
        }
      }
    } catch (IOException e) {
      throw new AgentNestException("expose bench failed on port " + port + ": " + e, e);
    }
    return ms;
  }

  /** Connect, request, echo, close: one connection per request. */
  private static double[] fresh(int port, int iterations, int warmup) {
    byte[] msg = new byte[64];
    byte[] back = new byte[64];
    double[] ms = new double[iterations];
    try (ProgressBar pb = Progress.bar("expose connect :" + port, iterations)) {
      for (int i = 0; i < warmup + iterations; i++) {
        long t0 = System.nanoTime();
        try (Socket s = connect(port)) {
          s.getOutputStream().write(msg);
          readFully(s.getInputStream(), back);
        }
        if (i >= warmup) {
          ms[i - warmup] = (System.nanoTime() - t0) / 1e6;
          pb.step();
        }
      }
    } catch (IOException e) {
      throw new AgentNestException("expose bench failed on port " + port + ": " + e, e);
    }
    return ms;
  }

  private static Socket connect(int port) throws IOException {
    Socket s = new Socket();
    s.setTcpNoDelay(true);
    s.setSoTimeout(SO_TIMEOUT_MS);
    s.connect(new InetSocketAddress("127.0.0.1", port), SO_TIMEOUT_MS);
    return s;
  }

  private static void readFully(InputStream in, byte[] b) throws IOException {
    int off = 0;
    while (off < b.length) {
      int n = in.read(b, off, b.length - off);
      if (n < 0) {
        throw new IOException("the echo server closed the connection");
      }
      off += n;
    }
  }
}
