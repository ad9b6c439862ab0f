package io.agentnest.escapes.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A listener on the host's loopback that greets every connection with a banner: the sandbox's own
 * loopback has no such listener, so a probe that reads the banner has reached the host.
 */
public final class HostListener implements AutoCloseable {
  public static final String BANNER = "AGENTNEST-HOST-LISTENER";
  private final ServerSocket server;
  private final AtomicInteger accepted = new AtomicInteger();
  private final Thread thread;

  public HostListener() throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    thread = new Thread(this::serve, "escape-suite-host-listener");
    thread.setDaemon(true);
    thread.start();
  }

  private void serve() {
    // Bounded: the suite's probes make a handful of attempts; the listener closes with the suite.
    for (int i = 0; i < 10_000 && !server.isClosed(); i++) {
      try (Socket s = server.accept()) {
        accepted.incrementAndGet();
        OutputStream o = s.getOutputStream();
        o.write((BANNER + "\n").getBytes(StandardCharsets.US_ASCII));
        o.flush();
      } catch (IOException e) {
        if (server.isClosed()) {
          return;
        }
      }
    }
  }

  public int port() {
    return server.getLocalPort();
  }

  /** Connections accepted so far. */
  public int accepted() {
    return accepted.get();
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
