package io.agentnest.cli;

import com.sun.management.OperatingSystemMXBean;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ConfigException;
import io.agentnest.Sandbox;
import io.agentnest.server.AgentNestServer;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.ApiKey;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import io.agentnest.spi.support.AgentNestHome;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code agentnest engine}: the local engine the Python package starts on first use. It is {@code
 * agentnest serve} in single-user mode: the same {@code /v1} API, policy, audit and approvals, on a
 * Unix domain socket under {@code AGENTNEST_HOME/engine} that only this user can reach, with one
 * tenant ({@code local}) whose key is written beside the socket (mode 0600) for the user's own
 * clients. It exits by itself after it has been idle (no connection, no sandbox) for a while.
 */
@Command(
    name = "engine",
    mixinStandardHelpOptions = true,
    description = {
      "Runs the local engine: the /v1 API (docs/openapi.yaml) on a Unix socket under"
          + " AGENTNEST_HOME/engine, reachable by this user only. The Python package starts it on"
          + " first use; you rarely run it yourself.",
      "Its policy is engine.yaml in AGENTNEST_HOME when that file exists (server.yaml's format),"
          + " else the user's own: any local image, the host's memory and CPUs, any egress host"
          + " the sandbox's allowlist names.",
      "  agentnest engine --idle-exit 10m"
    })
final class EngineCommand implements Callable<Integer> {
  /** Files under {@code AGENTNEST_HOME/engine}: the clients read these names. */
  static final String DIR = "engine";

  static final String SOCKET = "engine.sock";
  static final String KEY = "key";
  static final String INFO = "engine.json";
  static final String TENANT = "local";

  @Option(
      names = "--idle-exit",
      paramLabel = "DURATION",
      defaultValue = "10m",
      description = "Exit after this long with no client connection and no sandbox (default 10m).")
  String idleExit = "10m";

  @Option(
      names = "--warm-pool",
      paramLabel = "N",
      defaultValue = "1",
      description =
          "Sandboxes kept ready for each of the first two shapes the user asks for, so that the"
              + " next Sandbox() of that shape starts without a container start (0: none).")
  int warmPool = 1;

  @Option(
      names = "--socket",
      paramLabel = "PATH",
      description = "Socket path (default AGENTNEST_HOME/engine/engine.sock).")
  @Nullable Path socket;

  @Override
  public Integer call() throws Exception {
    Duration idle = Durations.parse("--idle-exit", idleExit);
    Path dir = AgentNestHome.dir().resolve(DIR);
    Path sock = socket == null ? dir.resolve(SOCKET) : socket.toAbsolutePath();
    if (sock.toString().getBytes(StandardCharsets.UTF_8).length > 100) {
      throw new ConfigException(
          "the engine socket path "
              + sock
              + " is longer than a Unix socket allows (about 100 bytes): set AGENTNEST_HOME to a"
              + " shorter directory");
    }
    try {
      AgentNestServer.ownerOnlyDirectory(dir);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
    ServerConfig config;
    Path custom = AgentNestHome.dir().resolve("engine.yaml");
    try {
      config = Files.exists(custom) ? ServerConfig.load(custom) : localConfig();
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
    TenantStore store = TenantStore.open(dir.resolve("tenants.db"), Clock.systemUTC());
    writeOwnerOnly(dir.resolve(KEY), freshKey(store));
    // The engine ends its sandboxes itself (its shutdown hook below), pools included.
    Sandbox.destroyOnExit(false);
    EnginePools pools = new EnginePools(warmPool);
    AgentNestServer server = new AgentNestServer(config, store, pools).listenOnUnixSocket(sock);
    CountDownLatch stopped = new CountDownLatch(1);
    AtomicBoolean idleStop = new AtomicBoolean();
    Thread hook =
        new Thread(
            () -> {
              // Stopped by a person or a signal: the sandboxes were this engine's, not detached.
              if (!idleStop.get()) {
                server.destroyAll();
              }
              pools.close();
              server.close();
              store.close();
              try {
                Files.deleteIfExists(dir.resolve(INFO));
              } catch (IOException ignored) {
                // A stale info file names a dead pid: clients check the pid and the socket.
              }
              stopped.countDown();
            },
            "agentnest-engine-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      server.start();
    } catch (IllegalArgumentException e) {
      Runtime.getRuntime().removeShutdownHook(hook);
      server.close();
      store.close();
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
    writeInfo(dir.resolve(INFO), sock);
    System.err.println(
        "agentnest engine "
            + version()
            + ": listening on "
            + sock
            + " (exits after "
            + idleExit
            + " idle)");
    System.err.flush();
    watchIdle(server, idle, idleStop, stopped);
    stopped.await();
    return ExitCodes.OK;
  }

  /** The version clients compare with their own: one engine serves one package version. */
  static String version() {
    String v = AgentNestCli.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
  }

  /** The single user's policy: what a local {@code Sandbox.create} may do, over the socket. */
  static ServerConfig localConfig() {
    long memory = hostMemoryBytes();
    ServerConfig.Policy p =
        new ServerConfig.Policy(
            "agentnest/python:latest",
            List.of("*"),
            memory,
            Runtime.getRuntime().availableProcessors(),
            Duration.ofMinutes(30),
            Duration.ofDays(1),
            List.of("*"),
            ServerConfig.Policy.DEFAULT_RUNTIMES,
            List.of("*"),
            List.of(),
            ApprovalPolicy.none(),
            // The user's own host: the kernel's bounds, not a shared server's per-tenant ones.
            32_768,
            10_000,
            Long.MAX_VALUE / 4);
    return ServerConfig.defaults().withPolicy(p);
  }

  private static long hostMemoryBytes() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os) {
      return os.getTotalMemorySize();
    }
    return 2L << 30;
  }

  /** A new key for the engine's tenant each start; earlier ones are revoked. */
  private static String freshKey(TenantStore store) {
    if (store.find(TENANT).isEmpty()) {
      return store.add(
          new Tenant(TENANT, 10_000, Long.MAX_VALUE / 4, 1_000_000, 100_000, null, null, 0), null);
    }
    for (ApiKey k : store.keys(TENANT)) {
      if (k.revoked() == null) {
        store.revoke(k.id());
      }
    }
    return store.issueKey(TENANT, null);
  }

  private static void writeOwnerOnly(Path file, String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    Files.createFile(
        tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(tmp, text);
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static void writeInfo(Path file, Path sock) throws IOException {
    Map<String, Object> info = new LinkedHashMap<>();
    info.put("pid", ProcessHandle.current().pid());
    info.put("version", version());
    info.put("socket", sock.toString());
    writeOwnerOnly(file, CliJson.MAPPER.writeValueAsString(info));
  }

  /** Exits once the engine has had no connection and no sandbox for {@code idle}. */
  private static void watchIdle(
      AgentNestServer server, Duration idle, AtomicBoolean idleStop, CountDownLatch stopped) {
    Thread t =
        new Thread(
            () -> {
              long idleSince = System.nanoTime();
              try {
                while (!stopped.await(1, TimeUnit.SECONDS)) {
                  if (server.openConnections() > 0 || server.sandboxCount() > 0) {
                    idleSince = System.nanoTime();
                  } else if (System.nanoTime() - idleSince >= idle.toNanos()) {
                    System.err.println("agentnest engine: idle for " + idle + ", exiting");
                    idleStop.set(true);
                    System.exit(ExitCodes.OK);
                  }
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "agentnest-engine-idle");
    t.setDaemon(true);
    t.start();
  }
}
