package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.Artifact;
import io.agentnest.ExecError;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.FileInfo;
import io.agentnest.ForkReport;
import io.agentnest.Limit;
import io.agentnest.PythonSession;
import io.agentnest.RemoteServer;
import io.agentnest.ResourceUsage;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxFiles;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.UnsupportedControlException;
import io.agentnest.internal.files.ArtifactTransfer;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A sandbox on an {@code agentnest serve} server. The server enforces the policy (its own, narrowed
 * by the tenant's); this class only carries calls. What the HTTP API does not carry yet fails with
 * {@link UnsupportedControlException} naming the operation, never silently.
 */
public final class RemoteSandbox implements Sandbox {
  private static final Duration SLACK = Duration.ofSeconds(30);

  /** What a configuration holds when nothing was set: settings still there went unsaid. */
  private static final SandboxConfig DEFAULTS = SandboxConfig.builder().build();

  /** Fork, snapshot and restore copy a sandbox's files and sessions: minutes, not seconds. */
  private static final Duration FORK = Duration.ofMinutes(5);

  private final RemoteClient client;
  private final SandboxConfig config;
  private final String id;
  private volatile Instant expiresAt;
  private final AtomicBoolean destroyed = new AtomicBoolean();
  private final @Nullable ForkReport forkReport;

  private RemoteSandbox(
      RemoteClient client,
      SandboxConfig config,
      String id,
      Instant expiresAt,
      @Nullable ForkReport forkReport) {
    this.client = client;
    this.config = config;
    this.id = id;
    this.expiresAt = expiresAt;
    this.forkReport = forkReport;
  }

  /** Creates a sandbox on the configured server; refuses settings the server cannot take. */
  public static Sandbox create(SandboxConfig config) {
    RemoteServer server = config.remote();
    if (server == null) {
      throw new IllegalArgumentException("not a remote configuration");
    }
    RemoteCreateRequest.refuseLocalOnly(config);
    ObjectNode body = RemoteCreateRequest.body(config);
    RemoteClient client = new RemoteClient(server);
    JsonNode made = client.json("POST", "/v1/sandboxes", body, config.startTimeout().plus(SLACK));
    return adopt(client, config, made, null);
  }

  static UnsupportedControlException unsupported(String what) {
    return new UnsupportedControlException(
        "remote sandboxes do not support "
            + what
            + " yet (the server's HTTP API does not carry"
            + " it; see docs/server.md): run it on a local sandbox");
  }

  private String path(String rest) {
    if (destroyed.get()) {
      throw new SandboxClosedException(
          "sandbox " + id + " was destroyed: create a new one with Sandbox.create");
    }
    return "/v1/sandboxes/" + RemoteClient.q(id) + rest;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public ExecResult runCode(String code) {
    return runCode(code, ExecOptions.defaults());
  }

  @Override
  public ExecResult runCode(String code, ExecOptions options) {
    return code(code, null, options);
  }

  ExecResult code(String code, @Nullable String session, ExecOptions options) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("code", code);
    if (session != null) {
      body.put("session", session);
    }
    Duration timeout = timeout(body, options);
    refuseOptions(options, true);
    return call("/code", body, options, timeout);
  }

  /** A call: one request, or, when the caller listens to output as it comes, a stream. */
  private ExecResult call(String route, ObjectNode body, ExecOptions options, Duration timeout) {
    if (options.onOutput() == null) {
      return result(client.json("POST", path(route), body, timeout));
    }
    Execution e = RemoteStream.start(client, path(""), route, body, options, timeout, true);
    return await(e);
  }

  private static ExecResult await(Execution e) {
    try {
      return e.result().join();
    } catch (CompletionException ex) {
      Throwable cause = ex.getCause();
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      throw ex;
    }
  }

  Execution startCall(String route, ObjectNode body, ExecOptions options) {
    Duration timeout = timeout(body, options);
    if (route.equals("/code")) {
      refuseOptions(options, true);
    } else {
      execFields(body, options);
    }
    return RemoteStream.start(client, path(""), route, body, options, timeout, false);
  }

  Execution startCode(String code, @Nullable String session, ExecOptions options) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("code", code);
    if (session != null) {
      body.put("session", session);
    }
    return startCall("/code", body, options);
  }

  @Override
  public PythonSession pythonSession(String name) {
    return new RemoteSession(this, name);
  }

  @Override
  public ExecResult exec(String command) {
    return exec(command, ExecOptions.defaults());
  }

  @Override
  public ExecResult exec(String command, ExecOptions options) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("command", command);
    return exec(body, options);
  }

  @Override
  public ExecResult exec(List<String> argv, ExecOptions options) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    var a = body.putArray("argv");
    argv.forEach(a::add);
    return exec(body, options);
  }

  private ExecResult exec(ObjectNode body, ExecOptions options) {
    Duration timeout = timeout(body, options);
    execFields(body, options);
    return call("/exec", body, options, timeout);
  }

  private static void execFields(ObjectNode body, ExecOptions options) {
    refuseOptions(options, false);
    if (options.workdir() != null) {
      body.put("workdir", options.workdir());
    }
    if (!options.env().isEmpty()) {
      ObjectNode env = body.putObject("env");
      options.env().forEach(env::put);
    }
    byte[] stdin = options.stdin();
    if (stdin.length > 0) {
      body.put("stdin", new String(stdin, StandardCharsets.UTF_8));
    }
  }

  /** Puts the call's bounds (its own, else the sandbox's) in the body; returns the HTTP wait. */
  private Duration timeout(ObjectNode body, ExecOptions options) {
    Long max = options.maxOutputBytes();
    if (max == null && config.maxOutputBytes() != DEFAULTS.maxOutputBytes()) {
      max = config.maxOutputBytes();
    }
    if (max != null) {
      body.put("maxOutputBytes", max);
    }
    Duration t = options.timeout() != null ? options.timeout() : config.execTimeout();
    body.put("timeoutSeconds", Math.min(3600, Math.max(1, (t.toMillis() + 999) / 1000)));
    return t.plus(SLACK);
  }

  private static void refuseOptions(ExecOptions o, boolean python) {
    if (python && (o.workdir() != null || !o.env().isEmpty() || o.stdin().length > 0)) {
      throw unsupported("workdir, env and stdin for Python calls");
    }
  }

  static ExecResult result(JsonNode r) {
    JsonNode e = r.path("error");
    ExecError error =
        e.isObject()
            ? new ExecError(
                e.path("name").asText(), e.path("value").asText(), e.path("traceback").asText())
            : null;
    String limit = r.path("limit").isTextual() ? r.path("limit").asText() : null;
    Map<String, Integer> redactions = new HashMap<>();
    r.path("redactions")
        .fields()
        .forEachRemaining(f -> redactions.put(f.getKey(), f.getValue().asInt()));
    return new ExecResult(
        r.path("exitCode").asInt(),
        r.path("stdout").asText(""),
        r.path("stderr").asText(""),
        r.path("result").isTextual() ? r.path("result").asText() : null,
        List.of(),
        error,
        Duration.ofMillis(r.path("durationMillis").asLong()),
        limit == null ? null : Limit.valueOf(limit.toUpperCase(Locale.ROOT)),
        r.path("truncated").asBoolean(),
        r.path("stateLost").asBoolean(),
        redactions);
  }

  @Override
  public Execution start(String command, ExecOptions options) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("command", command);
    return startCall("/exec", body, options);
  }

  @Override
  public Execution start(List<String> argv, ExecOptions options) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    var a = body.putArray("argv");
    argv.forEach(a::add);
    return startCall("/exec", body, options);
  }

  @Override
  public Execution startCode(String code, ExecOptions options) {
    return startCode(code, null, options);
  }

  @Override
  public CompletableFuture<ExecResult> execAsync(String command, ExecOptions options) {
    return CompletableFuture.supplyAsync(() -> exec(command, options));
  }

  @Override
  public CompletableFuture<ExecResult> runCodeAsync(String code, ExecOptions options) {
    return CompletableFuture.supplyAsync(() -> runCode(code, options));
  }

  /**
   * A copy made by the server (counted against the tenant's quota); its {@link #forkReport} is
   * empty, since the HTTP API reports only the mode.
   */
  @Override
  public Sandbox fork() {
    JsonNode made = client.json("POST", path("/fork"), Json.MAPPER.createObjectNode(), FORK);
    return adopt(client, config, made.path("sandbox"), forkReport(made.path("report")));
  }

  @Override
  public List<Sandbox> fork(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("fork(n) needs n >= 1, got " + n);
    }
    List<Sandbox> out = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        out.add(fork());
      }
    } catch (RuntimeException e) {
      // All or nothing, as a local fork(n): the copies made so far go.
      out.forEach(Sandbox::close);
      throw e;
    }
    return out;
  }

  @Override
  public void prepareForks(int n) {
    throw unsupported("prepareForks");
  }

  @Override
  public Optional<ForkReport> forkReport() {
    return Optional.ofNullable(forkReport);
  }

  private static @Nullable ForkReport forkReport(JsonNode r) {
    if (!r.isObject()) {
      return null;
    }
    Map<String, List<String>> sessions = new HashMap<>();
    r.path("sessions")
        .fields()
        .forEachRemaining(
            f -> {
              List<String> names = new ArrayList<>();
              f.getValue().forEach(n -> names.add(n.asText()));
              sessions.put(f.getKey(), names);
            });
    List<ForkReport.Skipped> skipped = new ArrayList<>();
    for (JsonNode k : r.path("skipped")) {
      skipped.add(
          new ForkReport.Skipped(
              k.path("session").asText(),
              k.path("name").asText(),
              k.path("type").asText(),
              k.path("reason").asText()));
    }
    return new ForkReport(
        r.path("parentId").asText(),
        ForkReport.Mode.valueOf(r.path("mode").asText().toUpperCase(Locale.ROOT)),
        sessions,
        skipped,
        r.path("fileBytes").asLong(),
        r.path("stateBytes").asLong(),
        Duration.ofMillis(r.path("durationMillis").asLong()));
  }

  /** Files matching the glob, with size and sha256; download them with {@code files().read}. */
  @Override
  public List<Artifact> artifacts(String glob) {
    JsonNode r = client.get(path("/artifacts?glob=" + RemoteClient.q(glob)));
    List<Artifact> out = new ArrayList<>();
    for (JsonNode a : r.path("artifacts")) {
      out.add(
          new Artifact(
              a.path("path").asText(), a.path("size").asLong(), a.path("sha256").asText(), null));
    }
    return out;
  }

  /**
   * The host-side transfer a local sandbox uses, over the server's archive route: what lands on
   * this host or leaves it is checked here, checksums are computed here.
   */
  private ArtifactTransfer transfer() {
    return new ArtifactTransfer(
        new RemoteArchives(client, this::path),
        files(),
        ArtifactTransfer.DEFAULT_MAX_BYTES,
        ArtifactTransfer.DEFAULT_MAX_ENTRIES);
  }

  @Override
  public List<Artifact> exportArtifacts(String glob, Path hostDir) {
    return transfer().export(glob, hostDir);
  }

  @Override
  public List<Artifact> upload(Path hostPath, String sandboxPath) {
    return transfer().upload(hostPath, sandboxPath);
  }

  @Override
  public List<Artifact> uploadArchive(Path tarFile, String sandboxPath) {
    return transfer().uploadArchive(tarFile, sandboxPath);
  }

  /**
   * Saves the sandbox's state on the server under the tenant's own {@code name}; restore it with
   * {@code Sandbox.restore(name, remoteConfig)}. The server keeps the image id to itself.
   */
  @Override
  public SnapshotInfo snapshot(String name, boolean replace) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("name", name);
    body.put("replace", replace);
    return snapshot(client.json("POST", path("/snapshots"), body, FORK), config);
  }

  private static SnapshotInfo snapshot(JsonNode s, SandboxConfig config) {
    List<String> sessions = new ArrayList<>();
    s.path("sessions").forEach(x -> sessions.add(x.asText()));
    return new SnapshotInfo(
        s.path("name").asText(),
        Instant.parse(s.path("createdAt").asText()),
        s.path("image").asText(),
        "",
        null,
        s.path("bytes").asLong(),
        sessions,
        s.path("memory").asBoolean(),
        "",
        config);
  }

  /** A new sandbox on the server from the tenant's snapshot {@code name}. */
  public static Sandbox restore(String name, SandboxConfig config) {
    RemoteServer server = config.remote();
    if (server == null) {
      throw new IllegalArgumentException("not a remote configuration");
    }
    RemoteClient client = new RemoteClient(server);
    JsonNode made =
        client.json(
            "POST",
            "/v1/snapshots/" + RemoteClient.q(name) + "/restore",
            Json.MAPPER.createObjectNode(),
            config.startTimeout().plus(FORK));
    return adopt(client, config, made, null);
  }

  /** The tenant's sandbox {@code id} on {@code server} (a whole id: the server takes no prefix). */
  public static Sandbox connect(RemoteServer server, String id) {
    RemoteClient client = new RemoteClient(server);
    JsonNode s = client.get("/v1/sandboxes/" + RemoteClient.q(id));
    return adopt(client, SandboxConfig.builder().remote(server).build(), s, null);
  }

  /** The tenant's snapshots on {@code server}. */
  public static List<SnapshotInfo> snapshots(RemoteServer server) {
    RemoteClient client = new RemoteClient(server);
    SandboxConfig config = SandboxConfig.builder().remote(server).build();
    List<SnapshotInfo> out = new ArrayList<>();
    for (JsonNode s : client.get("/v1/snapshots").path("snapshots")) {
      out.add(snapshot(s, config));
    }
    return out;
  }

  /** Removes the tenant's snapshot {@code name}; false when there was none. */
  public static boolean removeSnapshot(RemoteServer server, String name) {
    try {
      new RemoteClient(server)
          .bytes(
              "DELETE",
              "/v1/snapshots/" + RemoteClient.q(name),
              new byte[0],
              null,
              Duration.ofSeconds(60));
      return true;
    } catch (SnapshotException | SandboxNotFoundException none) {
      return false;
    }
  }

  private static RemoteSandbox adopt(
      RemoteClient client, SandboxConfig config, JsonNode made, @Nullable ForkReport report) {
    return new RemoteSandbox(
        client,
        config,
        made.path("id").asText(),
        Instant.parse(made.path("expiresAt").asText()),
        report);
  }

  @Override
  public SandboxFiles files() {
    return new RemoteFiles(client, this::path);
  }

  @Override
  public SandboxConfig config() {
    return config;
  }

  @Override
  public Instant expiresAt() {
    return expiresAt;
  }

  @Override
  public void extend(Duration more) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("seconds", Math.max(1, more.toSeconds()));
    JsonNode r = client.json("POST", path("/extend"), body, Duration.ofSeconds(60));
    expiresAt = Instant.parse(r.path("expiresAt").asText());
  }

  /** The server's last engine sample (its sandbox view's cpusInUse and memoryInUseBytes). */
  @Override
  public Optional<ResourceUsage> usage() {
    try {
      JsonNode r = client.get(path(""));
      JsonNode cpus = r.path("cpusInUse");
      JsonNode memory = r.path("memoryInUseBytes");
      if (!cpus.isNumber() || !memory.isNumber()) {
        return Optional.empty();
      }
      return Optional.of(
          new ResourceUsage(
              cpus.asDouble(), memory.asLong(), r.path("memoryBytes").asLong(), Instant.now()));
    } catch (RuntimeException e) {
      // Gone, unreachable, or figures out of range: no figure, as on a backend without any.
      return Optional.empty();
    }
  }

  @Override
  public boolean isAlive() {
    try {
      client.get(path(""));
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  @Override
  public void detach() {
    // Nothing is held open: each call is its own request.
  }

  @Override
  public void destroy() {
    if (destroyed.compareAndSet(false, true)) {
      try {
        client.bytes(
            "DELETE",
            "/v1/sandboxes/" + RemoteClient.q(id),
            new byte[0],
            null,
            Duration.ofSeconds(60));
      } catch (SandboxNotFoundException gone) {
        // already destroyed (expired, or by another client of the tenant)
      }
    }
  }

  @Override
  public void close() {
    destroy();
  }

  @Override
  public String toString() {
    return "RemoteSandbox[" + id + " on " + client.base() + "]";
  }

  /** Used by files(): builds the route of this sandbox. */
  interface Routes {
    String path(String rest);
  }

  static List<FileInfo> files(JsonNode r) {
    List<FileInfo> out = new ArrayList<>();
    for (JsonNode f : r.path("files")) {
      out.add(RemoteFiles.info(f));
    }
    return out;
  }
}
