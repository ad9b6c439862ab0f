package io.agentnest.server;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.io.SocketChannelEndPoint;
import org.eclipse.jetty.server.AbstractConnector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.handler.EagerContentHandler;
import org.eclipse.jetty.server.handler.MinimumDataRateHandler;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps slow and greedy clients from holding the server (issue 42, HIGH 2: 560 connections each
 * sending a sign-in body one byte every 20 s held all 512 request threads). Jetty's own parts:
 *
 * <ul>
 *   <li>{@link EagerContentHandler} gathers a body (up to {@link ServerLimits#eagerBodyBytes})
 *       without a thread, so a handler that reads its body never waits on the network for it;
 *   <li>{@link MinimumDataRateHandler} fails a body that arrives slower than {@link
 *       ServerLimits#minBodyBytesPerSecond}, and the connector's idle timeout closes a silent
 *       connection, so a held connection ends;
 *   <li>this class bounds the connections one client address holds open ({@link
 *       ServerLimits#connectionsPerAddress}): more are closed as they open.
 * </ul>
 */
final class ConnectionGuard implements Connection.Listener {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionGuard.class);

  private final int perAddress;
  private final Map<InetAddress, AtomicInteger> open = new ConcurrentHashMap<>();
  private final Map<Connection, InetAddress> counted = new ConcurrentHashMap<>();

  private ConnectionGuard(int perAddress) {
    this.perAddress = perAddress;
  }

  /**
   * Puts the guards in front of the server's handler (which Javalin has set by the time it asks for
   * the connector) and on {@code connector}.
   */
  static void install(Server server, AbstractConnector connector, ServerLimits limits) {
    connector.setIdleTimeout(limits.idleTimeoutMillis());
    if (limits.connectionsPerAddress() > 0) {
      connector.addEventListener(new ConnectionGuard(limits.connectionsPerAddress()));
    }
    server.insertHandler(
        new EagerContentHandler(
            new EagerContentHandler.FormContentLoaderFactory(),
            // A body over the bound is handed on unread (not refused): the handler's own bound
            // (max_json, max_body) answers it, and the data rate keeps it moving.
            new EagerContentHandler.RetainedContentLoaderFactory(
                limits.eagerBodyBytes(), -1, false)));
    if (limits.minBodyBytesPerSecond() > 0) {
      // Outermost, so that the eager reads are held to the rate too.
      server.insertHandler(new MinimumDataRateHandler(limits.minBodyBytesPerSecond(), 0));
    }
  }

  @Override
  public void onOpened(Connection connection) {
    InetAddress a = address(connection);
    if (a == null) {
      return;
    }
    AtomicInteger n = open.computeIfAbsent(a, k -> new AtomicInteger());
    if (n.incrementAndGet() > perAddress) {
      // Not counted: whether or not Jetty reports the close of a connection closed while it
      // opens, the count stays right.
      n.decrementAndGet();
      LOG.debug("closing a connection from {}: it holds {} already", a, perAddress);
      connection.getEndPoint().close();
      return;
    }
    counted.put(connection, a);
  }

  @Override
  public void onClosed(Connection connection) {
    // The address as counted: a closed end point no longer knows its remote address.
    InetAddress a = counted.remove(connection);
    if (a == null) {
      return;
    }
    AtomicInteger n = open.get(a);
    if (n != null && n.decrementAndGet() <= 0) {
      open.remove(a, n);
    }
  }

  /** The client address of a network connection; null for a layered one (TLS's inner side). */
  private static @Nullable InetAddress address(Connection connection) {
    EndPoint e = connection.getEndPoint();
    if (!(e instanceof SocketChannelEndPoint)) {
      return null;
    }
    SocketAddress remote = e.getRemoteSocketAddress();
    return remote instanceof InetSocketAddress i ? i.getAddress() : null;
  }
}
