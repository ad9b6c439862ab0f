package io.agentnest.server;

import io.agentnest.ApprovalHandler;
import io.agentnest.Backpressure;
import io.agentnest.ExecEvent;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Limit;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxInfo;
import io.agentnest.SnapshotInfo;
import io.agentnest.internal.call.DefaultExecution;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.store.SharedStore;
import io.agentnest.server.tenancy.TenantStore;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A server whose sandboxes are stand-ins (no engine): for tests of what the server decides before
 * or around a sandbox (authentication, quotas, policy), which need no container. Every config the
 * server asked to create is kept in {@link #created}.
 */
public final class FakeSandboxes implements AutoCloseable {
  public final List<SandboxConfig> created = new CopyOnWriteArrayList<>();

  /** The stand-ins this server made, by id (what another server adopts in {@link #adopt}). */
  private final Map<String, Sandbox> made = new ConcurrentHashMap<>();

  /**
   * Executions started on the fakes ({@code start}): each runs until cancelled, then finishes with
   * limit {@code cancelled}.
   */
  final List<Execution> started = new CopyOnWriteArrayList<>();

  final AtomicInteger cancelled = new AtomicInteger();

  public final TenantStore store;
  private final SharedStore shared;
  final AgentNestServer server;
  final int port;
  private final AtomicInteger seq = new AtomicInteger();
  private final String idPrefix;

  public FakeSandboxes(Path dir, String yaml) {
    this(dir, yaml, Map.of());
  }

  /** A server whose environment ({@code token_env}, {@code password_env}) is {@code env}. */
  public FakeSandboxes(Path dir, String yaml, Map<String, String> env) {
    this(
        SharedStore.local(TenantStore.open(dir.resolve("tenants.db"), Clock.systemUTC())),
        yaml,
        "fake",
        env);
  }

  /**
   * A server on {@code store} (closed with it) whose sandbox ids start with {@code idPrefix}: two
   * servers on one shared store need ids of their own, as two engines' sandboxes have.
   */
  public FakeSandboxes(TenantStore store, String yaml, String idPrefix) {
    this(SharedStore.local(store), yaml, idPrefix);
  }

  /** A server on {@code shared} (closed with it), as one of several servers sharing it. */
  public FakeSandboxes(SharedStore shared, String yaml, String idPrefix) {
    this(shared, yaml, idPrefix, Map.of());
  }

  private FakeSandboxes(SharedStore shared, String yaml, String idPrefix, Map<String, String> env) {
    this.shared = shared;
    this.store = shared.tenants();
    this.idPrefix = idPrefix;
    server =
        new AgentNestServer(
            ServerConfig.parse("listen: {host: 127.0.0.1, port: 0}\n" + yaml, "test"),
            shared,
            this::create,
            List::of,
            Clock.systemUTC(),
            env);
    port = server.start();
  }

  public Http http() {
    return new Http(port);
  }

  /** The approval handler a sandbox of {@code tenant} on this server gets (as create wires it). */
  public ApprovalHandler approvalHandler(String tenant, Duration timeout) {
    return server.approvals().handlerFor(tenant, timeout);
  }

  /**
   * Takes over the sandboxes {@code previous} made, as a restarted server adopts what its
   * predecessor on the same store left running (read from their labels, as from the engine).
   *
   * @return how many were adopted
   */
  public int adopt(FakeSandboxes previous) {
    List<SandboxInfo> running = new ArrayList<>();
    previous.made.forEach(
        (id, sb) ->
            running.add(
                new SandboxInfo(
                    id,
                    "fake",
                    sb.config().image(),
                    "runc",
                    "running",
                    Instant.now(),
                    sb.config().labels())));
    return server.adopt(() -> running, (id, tenant) -> previous.made.get(id));
  }

  private Sandbox create(SandboxConfig config) {
    Sandbox sb = standIn(config);
    made.put(sb.id(), sb);
    return sb;
  }

  private Sandbox standIn(SandboxConfig config) {
    created.add(config);
    String id = idPrefix + seq.incrementAndGet() + "0000000000000000";
    Instant expires = Instant.now().plus(config.ttl());
    return (Sandbox)
        Proxy.newProxyInstance(
            Sandbox.class.getClassLoader(),
            new Class<?>[] {Sandbox.class},
            (proxy, m, args) ->
                switch (m.getName()) {
                  case "id" -> id;
                  case "config" -> config;
                  case "expiresAt" -> expires;
                  case "toString" -> "fake sandbox " + id;
                  case "hashCode" -> System.identityHashCode(proxy);
                  case "equals" -> proxy == args[0];
                  case "close", "destroy", "detach" -> null;
                  case "isAlive" -> true;
                  case "start" -> runsUntilCancelled();
                  case "usage", "forkReport" -> Optional.empty();
                  case "snapshot" ->
                      new SnapshotInfo(
                          (String) args[0],
                          Instant.now(),
                          config.image(),
                          "sha256:fake",
                          null,
                          0,
                          List.of(),
                          false,
                          "",
                          config);
                  default ->
                      throw new UnsupportedOperationException(
                          "the fake sandbox does not " + m.getName());
                });
  }

  private Execution runsUntilCancelled() {
    DefaultExecution x = new DefaultExecution(64, Backpressure.BLOCK);
    AtomicBoolean once = new AtomicBoolean();
    x.onCancel(
        () -> {
          if (once.compareAndSet(false, true)) {
            cancelled.incrementAndGet();
            x.accept(
                new ExecEvent.Finished(
                    new ExecResult(
                        -1,
                        "",
                        "",
                        null,
                        List.of(),
                        null,
                        Duration.ZERO,
                        Limit.CANCELLED,
                        false,
                        false,
                        Map.of())));
          }
        });
    started.add(x);
    return x;
  }

  @Override
  public void close() {
    try {
      server.close();
    } finally {
      shared.close();
    }
  }
}
