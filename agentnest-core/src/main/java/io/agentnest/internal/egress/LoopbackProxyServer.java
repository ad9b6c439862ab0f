package io.agentnest.internal.egress;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.commons.io.IOUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves an {@link EgressProxy} on {@code 127.0.0.1:<ephemeral port>}, for tests and benchmarks:
 * each accepted connection runs {@link EgressProxy#handle} on a bounded thread pool (connections
 * beyond the pool and its queue are closed at once). Closing the proxy's client stream half-closes
 * the socket ({@code shutdownOutput}), so tunnels keep their half-close semantics.
 */
public final class LoopbackProxyServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LoopbackProxyServer.class);
  private static final AtomicInteger SERVERS = new AtomicInteger();

  private final EgressProxy proxy;
  private final ServerSocket server;
  private final ThreadPoolExecutor pool;
  private final Thread acceptor;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** Starts with at most 32 concurrent connections and 64 waiting. */
  public LoopbackProxyServer(EgressProxy proxy) throws IOException {
    this(proxy, 32, 64);
  }

  public LoopbackProxyServer(EgressProxy proxy, int maxConnections, int maxQueued)
      throws IOException {
    this.proxy = proxy;
    int n = SERVERS.incrementAndGet();
    this.server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 1}), 0), 128);
    AtomicInteger workers = new AtomicInteger();
    this.pool =
        new ThreadPoolExecutor(
            maxConnections,
            maxConnections,
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(Math.max(1, maxQueued)),
            r -> {
              Thread t = new Thread(r, "agentnest-egress-" + n + "-" + workers.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.allowCoreThreadTimeOut(true);
    this.acceptor = new Thread(this::acceptLoop, "agentnest-egress-accept-" + n);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The port on 127.0.0.1 the proxy listens on. */
  public int port() {
    return server.getLocalPort();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket s;
      try {
        s = server.accept();
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("egress loopback proxy stopped accepting", e);
        }
        return;
      }
      open.add(s);
      try {
        pool.execute(() -> serve(s));
      } catch (RejectedExecutionException e) {
        open.remove(s);
        IOUtils.closeQuietly(s);
      }
    }
  }

  private void serve(Socket s) {
    try {
      s.setTcpNoDelay(true);
      InputStream in =
          new FilterInputStream(s.getInputStream()) {
            @Override
            public void close() throws IOException {
              if (!s.isClosed() && !s.isInputShutdown()) {
                s.shutdownInput();
              }
            }
          };
      OutputStream out =
          new FilterOutputStream(s.getOutputStream()) {
            @Override
            public void write(byte[] b, int off, int len) throws IOException {
              this.out.write(b, off, len);
            }

            @Override
            public void close() throws IOException {
              if (!s.isClosed() && !s.isOutputShutdown()) {
                this.out.flush();
                s.shutdownOutput();
              }
            }
          };
      proxy.handle(in, out);
    } catch (SocketException e) {
      // the client went away
    } catch (IOException | RuntimeException e) {
      LOG.warn("egress loopback proxy connection failed", e);
    } finally {
      open.remove(s);
      IOUtils.closeQuietly(s);
    }
  }

  /** Stops accepting, closes every open connection and waits (bounded) for the workers. */
  @Override
  public void close() {
    closed = true;
    IOUtils.closeQuietly(server);
    for (Socket s : open) {
      IOUtils.closeQuietly(s);
    }
    pool.shutdownNow();
    try {
      if (!pool.awaitTermination(5, TimeUnit.SECONDS)) {
        LOG.warn("egress loopback proxy workers still running after 5 s");
      }
      acceptor.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
