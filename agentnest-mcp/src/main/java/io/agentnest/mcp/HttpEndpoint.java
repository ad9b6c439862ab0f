package io.agentnest.mcp;

import io.agentnest.AgentNestException;
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
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.EnumSet;
import java.util.Locale;
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
   * Bearer-token check (when a token is set), Host/Origin checks on loopback (against DNS rebinding
   * and cross-site requests from a browser), and the end of a session on DELETE.
   */
  static final class Guard implements Filter {
    private final byte @Nullable [] token;
    private final boolean loopback;
    private final Consumer<String> sessionEnded;

    Guard(@Nullable String token, boolean loopback, Consumer<String> sessionEnded) {
      this.token =
          token == null || token.isBlank() ? null : token.strip().getBytes(StandardCharsets.UTF_8);
      this.loopback = loopback;
      this.sessionEnded = sessionEnded;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest http = (HttpServletRequest) req;
      HttpServletResponse out = (HttpServletResponse) res;
      if (token != null) {
        String auth = http.getHeader("Authorization");
        byte[] given =
            auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)
                ? auth.substring(7).strip().getBytes(StandardCharsets.UTF_8)
                : new byte[0];
        if (!MessageDigest.isEqual(given, token)) {
          out.setHeader("WWW-Authenticate", "Bearer realm=\"agentnest\"");
          deny(
              out,
              401,
              auth == null
                  ? "missing bearer token: send 'Authorization: Bearer <token>' (the token of"
                      + " AGENTNEST_MCP_TOKEN / --token-file)"
                  : "wrong bearer token");
          return;
        }
      }
      if (loopback) {
        String hostHeader = http.getHeader("Host");
        if (hostHeader != null && !isLocalHost(hostOf(hostHeader))) {
          deny(out, 403, "Host '" + clip(hostHeader) + "' is not a loopback name");
          return;
        }
        String origin = http.getHeader("Origin");
        if (origin != null && token == null && !isLocalOrigin(origin)) {
          deny(out, 403, "cross-origin request from '" + clip(origin) + "' refused");
          return;
        }
      }
      chain.doFilter(req, res);
      if ("DELETE".equalsIgnoreCase(http.getMethod())) {
        String session = http.getHeader("Mcp-Session-Id");
        if (session != null) {
          sessionEnded.accept(session);
        }
      }
    }

    private static void deny(HttpServletResponse out, int status, String why) throws IOException {
      out.setStatus(status);
      out.setContentType("text/plain;charset=utf-8");
      out.getWriter().write(why + "\n");
    }

    private static String clip(String s) {
      return s.length() > 100 ? s.substring(0, 100) + "..." : s;
    }

    static String hostOf(String hostHeader) {
      String h = hostHeader.strip().toLowerCase(Locale.ROOT);
      if (h.startsWith("[")) {
        int end = h.indexOf(']');
        return end < 0 ? h : h.substring(1, end);
      }
      int colon = h.lastIndexOf(':');
      return colon >= 0 && h.indexOf(':') == colon ? h.substring(0, colon) : h;
    }

    static boolean isLocalHost(String host) {
      return host.equals("localhost")
          || host.equals("127.0.0.1")
          || host.equals("::1")
          || host.startsWith("127.");
    }

    static boolean isLocalOrigin(String origin) {
      try {
        URI u = URI.create(origin.strip());
        String h = u.getHost();
        if (h == null) {
          return false;
        }
        if (h.startsWith("[") && h.endsWith("]")) {
          h = h.substring(1, h.length() - 1);
        }
        return isLocalHost(h.toLowerCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        return false;
      }
    }
  }
}
