package io.agentnest.mcp;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.ConfigException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.tools.ToolLimits;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The AgentNest MCP server: sandboxes as Model Context Protocol tools, over stdio or streamable
 * HTTP, built on the official MCP Java SDK.
 *
 * <p>Each MCP session gets its own default sandbox (created on first use, destroyed when the
 * session ends) and may create more. Every sandbox is created from the one {@link SandboxConfig}
 * given here, so the policy (limits, network allowlist, approvals, redaction, audit) is exactly the
 * Java API's; a model cannot change it. Approvals are asked through MCP elicitation when the client
 * supports it, else the configuration's {@link io.agentnest.ApprovalHandler} decides (deny by
 * default).
 *
 * <pre>{@code
 * AgentNestMcpServer server = AgentNestMcpServer.builder().config(SandboxConfig.defaults()).build();
 * server.serveStdio(System.in, System.out);            // blocks until the client disconnects
 * }</pre>
 */
public final class AgentNestMcpServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AgentNestMcpServer.class);

  static final String INSTRUCTIONS =
      "AgentNest runs code in isolated, hardened sandboxes. Use run_python for Python (state"
          + " persists between calls), run_shell for commands, write_file/read_file/list_files for"
          + " the /workspace directory, export_artifact to get images and files back. The sandbox"
          + " has no network unless the operator allowed hosts. Each session has a default"
          + " sandbox; create_sandbox gives more.";

  private final SandboxConfig config;
  private final ToolLimits limits;
  private final int maxSandboxes;
  private final Duration idleTimeout;
  private final Function<SandboxConfig, Sandbox> factory;
  private final List<SyncToolSpecification> extraTools;
  private final String version;
  private final McpJsonMapper json = new JacksonMcpJsonMapper(new ObjectMapper());

  /** Elicitations wait for a person: a few at a time, a bounded queue, the rest denied. */
  private final ExecutorService approvals =
      new ThreadPoolExecutor(
          4,
          4,
          60,
          TimeUnit.SECONDS,
          new ArrayBlockingQueue<>(64),
          daemon("agentnest-mcp-approval"));

  private final ScheduledExecutorService timer =
      Executors.newScheduledThreadPool(1, daemon("agentnest-mcp-timer"));
  private final McpSessions sessions;
  private final List<AutoCloseable> running = new ArrayList<>();
  private boolean reaping;

  private AgentNestMcpServer(Builder b) {
    this.config = b.config;
    this.limits = b.limits;
    this.maxSandboxes = b.maxSandboxes;
    this.idleTimeout = b.idleTimeout;
    this.factory = b.factory;
    this.extraTools = List.copyOf(b.extraTools);
    this.version = b.version;
    this.sessions =
        new McpSessions(config, factory, limits, maxSandboxes, approvals, b.sessionLabel);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The tools this server offers (for documentation and tests). */
  public List<McpSchema.Tool> tools() {
    List<McpSchema.Tool> out = new ArrayList<>();
    for (SyncToolSpecification s : specs()) {
      out.add(s.tool());
    }
    return out;
  }

  private List<SyncToolSpecification> specs() {
    List<SyncToolSpecification> all = new ArrayList<>(new McpTools(sessions, timer).all());
    all.addAll(extraTools);
    return all;
  }

  private McpSyncServer build(McpServer.SyncSpecification<?> spec) {
    return spec.serverInfo("agentnest", version)
        .instructions(INSTRUCTIONS)
        .capabilities(McpSchema.ServerCapabilities.builder().tools(false).logging().build())
        // Server -> client requests (elicitation) wait for a person: the policy's approval
        // timeout is what bounds them.
        .requestTimeout(config.network().approvalTimeout().plus(Duration.ofSeconds(30)))
        .tools(specs())
        .build();
  }

  /**
   * Serves one MCP session over stdio until {@code in} ends (the client went away), then destroys
   * the session's sandboxes. Nothing but protocol messages is written to {@code out}.
   */
  public void serveStdio(InputStream in, OutputStream out) throws InterruptedException {
    CountDownLatch eof = new CountDownLatch(1);
    // Bad lines (too large, not JSON-RPC) are answered and dropped before the SDK sees them: it
    // would end the session on the first one.
    InputStream watched =
        new FilterInputStream(new StdioMessageGuard(in, out)) {
          @Override
          public int read() throws IOException {
            int b = super.read();
            if (b < 0) {
              eof.countDown();
            }
            return b;
          }

          @Override
          public int read(byte[] buf, int off, int len) throws IOException {
            try {
              int n = super.read(buf, off, len);
              if (n < 0) {
                eof.countDown();
              }
              return n;
            } catch (IOException e) {
              eof.countDown();
              throw e;
            }
          }
        };
    StdioServerTransportProvider transport =
        new StdioServerTransportProvider(
            json, watched, out, StdioMessageGuard.MAX_MESSAGE_BYTES + 1);
    McpSyncServer server = build(McpServer.sync(transport));
    try {
      eof.await();
      LOG.info("stdin closed: the MCP client disconnected");
    } finally {
      sessions.closeAll();
      try {
        server.closeGracefully();
      } catch (RuntimeException e) {
        LOG.debug("closing the MCP server: {}", e.toString());
      }
    }
  }

  /**
   * Starts serving streamable HTTP at {@code http://HOST:PORT/mcp}; returns at once.
   *
   * @throws ConfigException when binding to a non-loopback address without a bearer token
   */
  public HttpEndpoint serveHttp(HttpOptions options) {
    boolean loopback = isLoopback(options.host());
    if (!loopback && (options.bearerToken() == null || options.bearerToken().isBlank())) {
      throw new ConfigException(
          "serving MCP on "
              + options.host()
              + " (not loopback) needs a bearer token: set AGENTNEST_MCP_TOKEN or --token-file,"
              + " or bind to 127.0.0.1");
    }
    HttpServletStreamableServerTransportProvider transport =
        HttpServletStreamableServerTransportProvider.builder()
            .jsonMapper(json)
            .mcpEndpoint(HttpEndpoint.PATH)
            .keepAliveInterval(Duration.ofSeconds(30))
            .build();
    McpSyncServer server = build(McpServer.sync(transport));
    startIdleReaper();
    HttpEndpoint endpoint =
        HttpEndpoint.start(options, loopback, transport, sessions::end, server::closeGracefully);
    synchronized (running) {
      running.add(endpoint);
    }
    return endpoint;
  }

  private synchronized void startIdleReaper() {
    if (reaping) {
      return;
    }
    reaping = true;
    // HTTP sessions may simply stop coming back: end them after the idle timeout. (A stdio
    // session ends with its process.)
    long every = Math.max(1, Math.min(60, idleTimeout.toSeconds() / 4));
    timer.scheduleAtFixedRate(
        () -> {
          try {
            sessions.reapIdle(idleTimeout);
          } catch (RuntimeException e) {
            LOG.warn("idle session reaper: {}", e.toString());
          }
        },
        every,
        every,
        TimeUnit.SECONDS);
  }

  /** Whether {@code host} (a name or address to bind) is a loopback address. */
  public static boolean isLoopback(String host) {
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException e) {
      throw new ConfigException(
          "cannot resolve MCP bind address '" + host + "': " + e.getMessage());
    }
  }

  /** Number of MCP sessions that have (or had, until they end) a sandbox map. */
  int sessionCount() {
    return sessions.size();
  }

  /** Stops HTTP endpoints and destroys every session's sandboxes. */
  @Override
  public void close() {
    List<AutoCloseable> all;
    synchronized (running) {
      all = new ArrayList<>(running);
      running.clear();
    }
    for (AutoCloseable c : all) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.debug("closing {}: {}", c, e.toString());
      }
    }
    sessions.closeAll();
    timer.shutdownNow();
    approvals.shutdownNow();
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  /** Options of the HTTP transport. */
  public record HttpOptions(String host, int port, @Nullable String bearerToken) {
    public HttpOptions {
      Objects.requireNonNull(host, "host");
      if (port < 0 || port > 65535) {
        throw new ConfigException("--http port must be 0-65535, got " + port);
      }
    }

    /** Loopback only, no token. */
    public static HttpOptions loopback(int port) {
      return new HttpOptions("127.0.0.1", port, null);
    }
  }

  /** Builds an {@link AgentNestMcpServer}. */
  public static final class Builder {
    private SandboxConfig config = SandboxConfig.defaults();
    private ToolLimits limits = ToolLimits.DEFAULTS;
    private int maxSandboxes = 5;
    private Duration idleTimeout = Duration.ofMinutes(30);
    private Function<SandboxConfig, Sandbox> factory = Sandbox::create;
    private final List<SyncToolSpecification> extraTools = new ArrayList<>();
    private String version = "dev";
    private boolean sessionLabel = true;

    private Builder() {}

    /** The configuration every sandbox is created with (policy, limits, network, approvals). */
    public Builder config(SandboxConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /** Caps on what tool answers carry. */
    public Builder limits(ToolLimits limits) {
      this.limits = Objects.requireNonNull(limits, "limits");
      return this;
    }

    /** Most sandboxes one MCP session may have at once (default 5). */
    public Builder maxSandboxesPerSession(int max) {
      if (max < 1) {
        throw new ConfigException("max sandboxes per session must be at least 1, got " + max);
      }
      this.maxSandboxes = max;
      return this;
    }

    /** An HTTP session without calls for this long is ended and its sandboxes destroyed. */
    public Builder idleTimeout(Duration idle) {
      if (idle.isNegative() || idle.isZero()) {
        throw new ConfigException("idle timeout must be positive, got " + idle);
      }
      this.idleTimeout = idle;
      return this;
    }

    /** How sandboxes are created (default {@link Sandbox#create(SandboxConfig)}). */
    public Builder sandboxFactory(Function<SandboxConfig, Sandbox> factory) {
      this.factory = Objects.requireNonNull(factory, "factory");
      return this;
    }

    /**
     * Whether each sandbox carries its MCP session's id as the label {@code mcp-session} (default
     * true). Turn it off when the sandboxes come from a warm pool: a pooled container's labels are
     * fixed when it starts (Docker cannot change them), so a per-session label would keep every
     * sandbox of the server out of the pool.
     */
    public Builder sessionLabel(boolean on) {
      this.sessionLabel = on;
      return this;
    }

    /** An additional tool (e.g. {@code fork_sandbox} once {@code Sandbox.fork()} exists). */
    public Builder extraTool(SyncToolSpecification tool) {
      extraTools.add(Objects.requireNonNull(tool, "tool"));
      return this;
    }

    /** Version reported to clients. */
    public Builder version(String version) {
      this.version = Objects.requireNonNull(version, "version");
      return this;
    }

    public AgentNestMcpServer build() {
      return new AgentNestMcpServer(this);
    }
  }
}
