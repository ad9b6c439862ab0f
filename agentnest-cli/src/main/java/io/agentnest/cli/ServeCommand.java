package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.Sandbox;
import io.agentnest.server.AgentNestServer;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.store.SharedStore;
import io.agentnest.spi.support.AgentNestHome;
import java.nio.file.Path;
import java.time.Clock;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code agentnest serve}: the remote HTTP API for many clients and tenants. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Serves the AgentNest HTTP API (docs/openapi.yaml, docs/server.md) for many clients and"
          + " tenants: every request carries a tenant's API key (`agentnest tenant add`), each"
          + " tenant sees only its own sandboxes and is held to its quotas and to the server's"
          + " policy (server.yaml).",
      "Listens on 127.0.0.1:8787 by default. A non-loopback address needs TLS (tls: in"
          + " server.yaml) or --insecure-behind-proxy.",
      "  agentnest serve --config server.yaml",
      "  agentnest serve --listen 127.0.0.1:0"
    })
final class ServeCommand implements Callable<Integer> {
  @Option(names = "--config", paramLabel = "FILE", description = "server.yaml (see docs/server.md)")
  @Nullable Path config;

  @Option(
      names = "--listen",
      paramLabel = "HOST:PORT",
      description = "Address to listen on, overriding server.yaml (port 0: any free port).")
  @Nullable String listen;

  @Option(
      names = "--insecure-behind-proxy",
      description =
          "Allow plain HTTP on a non-loopback address: only when a TLS-terminating proxy is in"
              + " front and the network between them is trusted.")
  boolean insecureBehindProxy;

  @Override
  public Integer call() throws Exception {
    if (System.getenv("AGENTNEST_URL") != null) {
      throw new ConfigException(
          "AGENTNEST_URL is set: the server makes sandboxes on its own engine, not on another"
              + " server; unset AGENTNEST_URL for `agentnest serve`");
    }
    ServerConfig c;
    try {
      c = config == null ? ServerConfig.defaults() : ServerConfig.load(config);
      if (listen != null) {
        int colon = listen.lastIndexOf(':');
        if (colon < 1) {
          throw new IllegalArgumentException(
              "--listen '" + listen + "' is not HOST:PORT: write e.g. 127.0.0.1:8787");
        }
        c = c.withListen(listen.substring(0, colon), Integer.parseInt(listen.substring(colon + 1)));
      }
      if (insecureBehindProxy) {
        c = c.withInsecureBehindProxy(true);
      }
      AgentNestServer.checkBind(c);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
    SharedStore store;
    try {
      // SQLite under AGENTNEST_HOME, or the PostgreSQL database of store.postgres.
      store = SharedStore.open(c, AgentNestHome.dir(), System.getenv(), Clock.systemUTC());
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
    // Its sandboxes outlive it on purpose: the next server on this store adopts them.
    Sandbox.destroyOnExit(false);
    AgentNestServer server = new AgentNestServer(c, store);
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook =
        new Thread(
            () -> {
              server.close();
              store.close();
              stopped.countDown();
            },
            "agentnest-serve-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    int port;
    try {
      port = server.start();
    } catch (IllegalArgumentException e) {
      // A configuration that only shows at start: e.g. an audit sink's environment variable unset.
      Runtime.getRuntime().removeShutdownHook(hook);
      server.close();
      store.close();
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
    System.err.println(
        "agentnest serve: listening on "
            + (server.tls() ? "https://" : "http://")
            + c.host()
            + ":"
            + port
            + (store.tenants().tenants().isEmpty()
                ? " (no tenants yet: `agentnest tenant add NAME`)"
                : ""));
    System.err.flush();
    stopped.await();
    return ExitCodes.OK;
  }
}
