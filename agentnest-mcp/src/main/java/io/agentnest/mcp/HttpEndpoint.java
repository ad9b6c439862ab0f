package io.agentnest.mcp;

import io.agentnest.AgentNestException;
import io.agentnest.text.HumanText;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.function.Consumer;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.jspecify.annotations.Nullable;

/** A running streamable-HTTP MCP endpoint (embedded Jetty) at {@code /mcp}. */
public final class HttpEndpoint implements AutoCloseable {
  /** Path of the MCP endpoint. */
  public static final String PATH = "/mcp";

  private final Server jetty;
  private final String host;
  private final int port;
  private final Runnable onClose;

  private HttpEndpoint(Server jetty, String host, int port, Runnable onClose) {
    this.jetty = jetty;
    this.host = host;
    this.port = port;
    this.onClose = onClose;
  }

  static HttpEndpoint start(
      AgentNestMcpServer.HttpOptions options,
      boolean loopback,
      HttpServletStreamableServerTransportProvider transport,
      Consumer<String> sessionEnded,
      Runnable onClose) {
    Server jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost(options.host());
    connector.setPort(options.port());
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.setContextPath("/");
    ServletHolder servlet = new ServletHolder("mcp", transport);
    servlet.setAsyncSupported(true);
    context.addServlet(servlet, PATH);
    FilterHolder guard = new FilterHolder(new Guard(options.bearerToken(), loopback, sessionEnded));
    guard.setAsyncSupported(true);
    context.addFilter(guard, "/*", EnumSet.of(DispatcherType.REQUEST));
    jetty.setHandler(context);
    jetty.setStopTimeout(2000);
    try {
      jetty.start();
    } catch (Exception e) {
      try {
        jetty.stop();
      } catch (Exception ignored) {
        // already failing
      }
      throw new AgentNestException(
          "cannot serve MCP on "
              + options.host()
              + ":"
              + options.port()
              + ": "
              + e.getMessage()
              + " (is the port in use? pick another with --http PORT)",
          e);
    }
    return new HttpEndpoint(jetty, options.host(), connector.getLocalPort(), onClose);
  }

  /** The port actually bound (useful with port 0). */
  public int port() {
    return port;
  }

  /** The endpoint's URL. */
  public URI uri() {
    String h = host.contains(":") ? "[" + host + "]" : host;
    return URI.create("http://" + h + ":" + port + PATH);
  }

  /** Blocks until the server stops. */
  public void join() throws InterruptedException {
    jetty.join();
  }

  @Override
  public void close() {
    try {
      onClose.run();
    } catch (RuntimeException e) {
      // closing anyway
    }
    try {
      jetty.stop();
    } catch (Exception e) {
      throw new AgentNestException("stopping the MCP HTTP server failed: " + e.getMessage(), e);
    }
  }

  /**
   * On loopback, Host and Origin must name loopback (against DNS rebinding and cross-site requests
   * from a browser, see {@link LoopbackNames}); then the bearer token, when one is set; and the end
   * of a session on DELETE.
   */
  static final class Guard implements Filter {
    private final @Nullable TokenCheck token;
    private final boolean loopback;
    private final Consumer<String> sessionEnded;

    Guard(@Nullable String token, boolean loopback, Consumer<String> sessionEnded) {
      this.token = token == null || token.isBlank() ? null : new TokenCheck(token.strip());
      this.loopback = loopback;
      this.sessionEnded = sessionEnded;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest http = (HttpServletRequest) req;
      HttpServletResponse out = (HttpServletResponse) res;
      if (loopback) {
        String refusal = loopbackRefusal(http);
        if (refusal != null) {
          deny(out, 403, refusal);
          return;
        }
      }
      if (token != null && !token.matches(http.getHeader("Authorization"))) {
        out.setHeader("WWW-Authenticate", "Bearer realm=\"agentnest\"");
        deny(
            out,
            401,
            http.getHeader("Authorization") == null
                ? "missing bearer token: send 'Authorization: Bearer <token>' (the token"
                    + " 'agentnest mcp --http' printed, kept in ~/.agentnest/mcp/http-token, or"
                    + " the one of AGENTNEST_MCP_TOKEN / --token-file)"
                : "wrong bearer token");
        return;
      }
      chain.doFilter(req, res);
      if ("DELETE".equalsIgnoreCase(http.getMethod())) {
        String session = http.getHeader("Mcp-Session-Id");
        if (session != null) {
          sessionEnded.accept(session);
        }
      }
    }

    /** Why a request to a loopback server is refused, or null when Host and Origin are local. */
    static @Nullable String loopbackRefusal(HttpServletRequest http) {
      List<String> hosts = Collections.list(http.getHeaders("Host"));
      if (hosts.size() != 1) {
        return hosts.isEmpty()
            ? "request without a Host header refused: send 'Host: 127.0.0.1:<port>'"
            : "request with " + hosts.size() + " Host headers refused";
      }
      if (!LoopbackNames.isLoopbackHost(hosts.get(0))) {
        return "Host '"
            + HumanText.line(hosts.get(0), 100)
            + "' is not a loopback name: use http://127.0.0.1:<port>/mcp, http://localhost:<port>/mcp"
            + " or http://[::1]:<port>/mcp";
      }
      List<String> origins = Collections.list(http.getHeaders("Origin"));
      if (origins.size() > 1) {
        return "request with " + origins.size() + " Origin headers refused";
      }
      if (origins.size() == 1 && !LoopbackNames.isLoopbackOrigin(origins.get(0))) {
        return "cross-origin request from '" + HumanText.line(origins.get(0), 100) + "' refused";
      }
      return null;
    }

    private static void deny(HttpServletResponse out, int status, String why) throws IOException {
      out.setStatus(status);
      out.setContentType("text/plain;charset=utf-8");
      out.getWriter().write(why + "\n");
    }
  }
}
