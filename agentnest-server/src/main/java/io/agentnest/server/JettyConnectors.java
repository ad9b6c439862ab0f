package io.agentnest.server;

import io.agentnest.server.config.ServerConfig;
import java.nio.file.Files;
import java.util.Map;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/** The server's Jetty side: its thread pool, the HTTP settings, and the TCP or TLS connector. */
final class JettyConnectors {
  private JettyConnectors() {}

  /**
   * Javalin's default pool stops at 250 threads, fewer than the 200 concurrent clients plus
   * their streams need; every blocking call holds a thread, so the pool is sized for the calls, and
   * bounded so a flood of slow calls cannot grow it without end (Jetty queues the rest).
   */
  static QueuedThreadPool threadPool(ServerLimits limits) {
    QueuedThreadPool pool =
        new QueuedThreadPool(limits.maxThreads(), Math.min(16, limits.maxThreads()));
    pool.setName("agentnest-server");
    return pool;
  }

  static void configure(HttpConfiguration h) {
    // Header floods: Jetty answers 431 past these sizes before any handler runs.
    h.setRequestHeaderSize(AgentNestServer.MAX_HEADER_BYTES);
    h.setResponseHeaderSize(AgentNestServer.MAX_HEADER_BYTES);
    h.setSendServerVersion(false);
    h.setSendXPoweredBy(false);
  }

  /** The TCP connector, with TLS when the config has a key store, and the connection bounds. */
  static ServerConnector connector(
      Server server,
      HttpConfiguration http,
      ServerConfig config,
      Map<String, String> env,
      ServerLimits limits) {
    ServerConnector c;
    ServerConfig.Tls tls = config.tls();
    if (tls == null) {
      c = new ServerConnector(server, new HttpConnectionFactory(http));
    } else {
      if (!Files.isReadable(tls.keystore())) {
        throw new IllegalArgumentException(
            "tls.keystore " + tls.keystore() + " is not a readable file: check the path");
      }
      String password = env.get(tls.passwordEnv());
      if (password == null) {
        throw new IllegalArgumentException(
            "tls.password_env names "
                + tls.passwordEnv()
                + ", which is not set: export it with the key store's password");
      }
      SslContextFactory.Server ssl = new SslContextFactory.Server();
      ssl.setKeyStorePath(tls.keystore().toString());
      ssl.setKeyStoreType(tls.type());
      ssl.setKeyStorePassword(password);
      HttpConfiguration https = new HttpConfiguration(http);
      https.addCustomizer(new SecureRequestCustomizer());
      c =
          new ServerConnector(
              server, new SslConnectionFactory(ssl, "http/1.1"), new HttpConnectionFactory(https));
    }
    c.setHost(config.host());
    c.setPort(config.port());
    // Behind a TLS-terminating proxy every client has the proxy's address: the proxy bounds them.
    ConnectionGuard.install(
        server, c, config.insecureBehindProxy() ? limits.withoutAddressBound() : limits);
    return c;
  }
}
