package io.agentnest;

import java.net.URI;

/**
 * A port inside a sandbox, reachable from the host: a listener on the host's loopback whose
 * connections are carried over the sandbox's agent channel to {@code 127.0.0.1:sandboxPort} in the
 * sandbox. No network interface is added to the sandbox. Closed with the sandbox, or on its own by
 * {@link #close()}; both are audited ({@code port.exposed}, {@code port.connection}, {@code
 * port.closed}).
 */
public interface Exposed extends AutoCloseable {
  /** The port inside the sandbox. */
  int sandboxPort();

  /** The host port on 127.0.0.1 that leads to it. */
  int port();

  /** {@code http://127.0.0.1:port/}; use another scheme (ws, https) on the same port as needed. */
  URI uri();

  /** Whether the host listener still accepts connections. */
  boolean isOpen();

  /** Connections carried right now. */
  int openConnections();

  /** Stops listening and ends the connections it carries. */
  @Override
  void close();
}
