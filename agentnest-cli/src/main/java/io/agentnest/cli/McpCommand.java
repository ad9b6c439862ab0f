package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.PoolOptions;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxPool;
import io.agentnest.Sizes;
import io.agentnest.mcp.AgentNestMcpServer;
import io.agentnest.mcp.HttpEndpoint;
import io.agentnest.tools.ToolLimits;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code agentnest mcp}: the MCP server over stdio (default) or streamable HTTP. */
@Command(
    name = "mcp",
    mixinStandardHelpOptions = true,
    description = {
      "Serves the Model Context Protocol: sandboxes as tools for Claude Code, Cursor, Claude"
          + " Desktop and any MCP client. Over stdio by default (nothing but protocol on stdout;"
          + " logs on stderr), or streamable HTTP at http://HOST:PORT/mcp with --http PORT.",
      "Each MCP session gets its own sandbox, destroyed when the session ends; the sandbox policy"
          + " comes from --config/--profile and the flags, as for 'agentnest run'.",
      "Over HTTP, clients must send a bearer token, even on loopback: a random one is generated"
          + " and kept in ~/.agentnest/mcp/http-token (mode 0600); the client configuration line is"
          + " printed at start.",
      "  claude mcp add agentnest -- agentnest mcp",
      "  agentnest mcp --http 8765",
      "  AGENTNEST_MCP_TOKEN=... agentnest mcp --http 8765 --host 0.0.0.0"
    })
final class McpCommand implements Callable<Integer> {
  @Option(
      names = "--http",
      paramLabel = "PORT",
      description = "Serve streamable HTTP on this port instead of stdio (0: any free port).")
  @Nullable Integer httpPort;

  @Option(
      names = "--host",
      paramLabel = "ADDR",
      description =
          "Address to bind with --http (default 127.0.0.1). A non-loopback address needs a bearer"
              + " token.")
  String host = "127.0.0.1";

  @Option(
      names = "--token-file",
      paramLabel = "FILE",
      description =
          "File holding the bearer token HTTP clients must send (default: $AGENTNEST_MCP_TOKEN,"
              + " else a random token generated once and kept in ~/.agentnest/mcp/http-token).")
  @Nullable Path tokenFile;

  @Option(
      names = "--no-token",
      description =
          "Serve HTTP on loopback without a bearer token. Every local user and process can then"
              + " drive the server; Host and Origin are still checked.")
  boolean noToken;

  @Option(
      names = "--max-sandboxes",
      description = "Most sandboxes one MCP session may have at once (default 5).")
  int maxSandboxes = 5;

  @Option(
      names = "--idle-timeout",
      description = "End an HTTP session idle this long and destroy its sandboxes (default 30m).")
  String idleTimeout = "30m";

  @Option(
      names = "--max-artifact",
      description = "Largest file export_artifact returns, e.g. 5m (default 5m).")
  String maxArtifact = "5m";

  @Mixin SandboxOptions sandbox = new SandboxOptions();

  @Mixin SecretOptions secrets = new SecretOptions();

  @Override
  public Integer call() throws Exception {
    // Stdio: the real stdout carries the protocol and nothing else; stray prints go to stderr.
    OutputStream protocolOut = new FileOutputStream(FileDescriptor.out);
    PrintStream stderr = System.err;
    if (httpPort == null) {
      System.setOut(stderr);
    }
    SandboxConfig config = secrets.applyTo(sandbox.toConfig(), httpPort != null);
    long artifact = Sizes.parse("--max-artifact", maxArtifact);
    if (artifact < 1 || artifact > 64L << 20) {
      throw new ConfigException(
          "--max-artifact must be between 1 byte and 64m, got " + maxArtifact);
    }
    String v = AgentNestCli.class.getPackage().getImplementationVersion();
    Optional<PoolOptions> poolOptions = sandbox.poolOptions();
    AgentNestMcpServer server =
        AgentNestMcpServer.builder()
            .config(config)
            .limits(ToolLimits.DEFAULTS.withMaxArtifactBytes((int) artifact))
            .maxSandboxesPerSession(maxSandboxes)
            .idleTimeout(Durations.parse("--idle-timeout", idleTimeout))
            .version(v == null ? "dev" : v)
            .sessionLabel(poolOptions.isEmpty())
            .build();
    // The profile's pool, if it has one: every sandbox the server creates is taken from it.
    Optional<SandboxPool> pool = poolOptions.map(o -> SandboxPool.start(config, o));
    Runnable shutdown =
        () -> {
          server.close();
          pool.ifPresent(SandboxPool::close);
        };
    Thread hook = new Thread(shutdown, "agentnest-mcp-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      if (httpPort == null) {
        server.serveStdio(new FileInputStream(FileDescriptor.in), protocolOut);
      } else {
        McpHttpAuth auth =
            McpHttpAuth.resolve(
                tokenFile,
                System.getenv("AGENTNEST_MCP_TOKEN"),
                noToken,
                AgentNestMcpServer.isLoopback(host));
        HttpEndpoint endpoint =
            server.serveHttp(new AgentNestMcpServer.HttpOptions(host, httpPort, auth.token()));
        stderr.println("agentnest mcp: serving " + endpoint.uri());
        auth.notice(endpoint.uri()).forEach(stderr::println);
        stderr.flush();
        endpoint.join();
      }
    } finally {
      shutdown.run();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs anyway
      }
    }
    return ExitCodes.OK;
  }
}
