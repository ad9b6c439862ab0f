package io.agentnest.internal.expose;

import io.agentnest.ExposeException;
import io.agentnest.Exposed;
import io.agentnest.audit.AuditEvent;
import io.agentnest.internal.channel.ChannelTunnel;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.DaemonThreads;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One exposed port: a listener on 127.0.0.1 whose every accepted connection becomes a tunnel to the
 * sandbox's port, pumped by two pooled threads (host socket to sandbox, sandbox to host socket).
 */
final class ExposedPort implements Exposed {
  private static final Logger LOG = LoggerFactory.getLogger(ExposedPort.class);
  private static final ExecutorService POOL = DaemonThreads.pool("agentnest-expose");
  private static final int BUFFER = 64 * 1024;

  private final PortForwards owner;
  private final int sandboxPort;
  private final ServerSocket server;
  private final Set<Connection> open = ConcurrentHashMap.newKeySet();
  private final AtomicInteger served = new AtomicInteger();
  private final AtomicInteger refused = new AtomicInteger();
  private final AtomicLong bytesIn = new AtomicLong();
  private final AtomicLong bytesOut = new AtomicLong();
  private volatile boolean closed;

  private ExposedPort(PortForwards owner, int sandboxPort, ServerSocket server) {
    this.owner = owner;
    this.sandboxPort = sandboxPort;
    this.server = server;
  }

  static ExposedPort open(PortForwards owner, int sandboxPort, int hostPort) {
    ServerSocket s = null;
    try {
      s = new ServerSocket();
      s.setReuseAddress(false);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), hostPort), 128);
      return new ExposedPort(owner, sandboxPort, s);
    } catch (IOException e) {
      if (s != null) {
        try {
          s.close();
        } catch (IOException ignored) {
          // never bound
        }
      }
      throw new ExposeException(
          ExposeException.Reason.HOST_PORT_UNAVAILABLE,
          "cannot listen on 127.0.0.1:"
              + hostPort
              + " for sandbox port "
              + sandboxPort
              + ": "
              + e.getMessage()
              + "; pick a free host port, or 0 for an ephemeral one",
          e);
    }
  }

  void startAccepting() {
    Thread t = new Thread(this::acceptLoop, "agentnest-expose-" + port());
    t.setDaemon(true);
    t.start();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket s;
      try {
        s = server.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.debug("exposed port {} stops accepting: {}", port(), e.toString());
          close();
        }
        return;
      }
      ChannelTunnel t = owner.admit();
      if (t == null || closed) {
        refused.incrementAndGet();
        if (t != null) {
          owner.release(t);
        }
        closeQuietly(s);
        continue;
      }
      Connection c = new Connection(s, t);
      open.add(c);
      try {
        c.start();
      } catch (RuntimeException e) {
        LOG.debug("cannot carry a connection to port {}: {}", sandboxPort, e.toString());
        c.end();
      }
    }
  }

  @Override
  public int sandboxPort() {
    return sandboxPort;
  }

  @Override
  public int port() {
    return server.getLocalPort();
  }

  @Override
  public URI uri() {
    return URI.create("http://127.0.0.1:" + port() + "/");
  }

  @Override
  public boolean isOpen() {
    return !closed;
  }

  @Override
  public int openConnections() {
    return open.size();
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    try {
      server.close();
    } catch (IOException ignored) {
      // nothing more to accept either way
    }
    open.forEach(Connection::end);
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("port", sandboxPort);
    m.put("host_port", port());
    m.put("connections", served.get());
    m.put("refused", refused.get());
    m.put("bytes_in", bytesIn.get());
    m.put("bytes_out", bytesOut.get());
    owner.audit(AuditEvent.PORT_CLOSED, m);
  }

  @Override
  public String toString() {
    return "Exposed[sandbox port " + sandboxPort + " at " + uri() + "]";
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // already gone
    }
  }

  /** One host connection and its tunnel; ended once both directions are done. */
  private final class Connection {
    private final Socket socket;
    private final ChannelTunnel tunnel;
    private final long started = System.nanoTime();
    private final AtomicInteger halves = new AtomicInteger(2);
    private volatile boolean ended;

    Connection(Socket socket, ChannelTunnel tunnel) {
      this.socket = socket;
      this.tunnel = tunnel;
    }

    void start() {
      try {
        socket.setTcpNoDelay(true);
      } catch (IOException ignored) {
        // latency only
      }
      owner
          .channel()
          .send(
              Json.object()
                  .put(Ops.OP, Ops.OP_PORT_OPEN)
                  .put("tid", tunnel.tid())
                  .put("port", sandboxPort)
                  .put("window", tunnel.window()),
              new byte[0]);
      POOL.execute(this::toSandbox);
      POOL.execute(this::toHost);
    }

    /** Host socket to sandbox; the client's half-close becomes the agent's shutdown(SHUT_WR). */
    private void toSandbox() {
      byte[] buf = new byte[BUFFER];
      try (OutputStream out = tunnel.out) {
        InputStream in = socket.getInputStream();
        for (int n; (n = in.read(buf)) >= 0; ) {
          out.write(buf, 0, n);
        }
      } catch (IOException e) {
        // The client or the sandbox went away: the other pump ends too.
        abortBoth();
      } finally {
        halfDone();
      }
    }

    /** Sandbox to host socket, until the sandbox side ends (eof) or drops (close). */
    private void toHost() {
      byte[] buf = new byte[BUFFER];
      try {
        OutputStream out = socket.getOutputStream();
        InputStream in = tunnel.in;
        for (int n; (n = in.read(buf)) >= 0; ) {
          out.write(buf, 0, n);
          out.flush();
        }
        if (tunnel.aborted()) {
          // Refused connect, a dropped tunnel: the client sees the connection end, not a hang.
          abortBoth();
        } else {
          socket.shutdownOutput();
        }
      } catch (IOException e) {
        abortBoth();
      } finally {
        halfDone();
      }
    }

    private void abortBoth() {
      tunnel.abort();
      closeQuietly(socket);
    }

    private void halfDone() {
      if (halves.decrementAndGet() == 0) {
        end();
      }
    }

    void end() {
      synchronized (this) {
        if (ended) {
          return;
        }
        ended = true;
      }
      tunnel.abort();
      tunnel.in.close();
      closeQuietly(socket);
      tunnel.sendClose();
      owner.release(tunnel);
      open.remove(this);
      served.incrementAndGet();
      bytesIn.addAndGet(tunnel.bytesIn());
      bytesOut.addAndGet(tunnel.bytesOut());
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("port", sandboxPort);
      m.put("host_port", server.getLocalPort());
      m.put("bytes_in", tunnel.bytesIn());
      m.put("bytes_out", tunnel.bytesOut());
      m.put("ms", (System.nanoTime() - started) / 1_000_000);
      owner.audit(AuditEvent.PORT_CONNECTION, m);
    }
  }
}
