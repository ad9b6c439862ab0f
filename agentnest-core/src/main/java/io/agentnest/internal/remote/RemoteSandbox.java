package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
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
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxFiles;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.SnapshotInfo;
import io.agentnest.UnsupportedControlException;
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
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A sandbox on an {@code agentnest serve} server. The server enforces the policy (its own, narrowed
 * by the tenant's); this class only carries calls. What the HTTP API does not carry yet fails with
 * {@link UnsupportedControlException} naming the operation, never silently.
 */
public final class RemoteSandbox implements Sandbox {
  private static final Duration SLACK = Duration.ofSeconds(30);

  /** Fork, snapshot and restore copy a sandbox's files and sessions: minutes, not seconds. */
  private static final Duration FORK = Duration.ofMinutes(5);

  private final RemoteClient client;
  private final SandboxConfig config;
  private final String id;
  private volatile Instant expiresAt;
  private final AtomicBoolean destroyed = new AtomicBoolean();

  private RemoteSandbox(RemoteClient client, SandboxConfig config, String id, Instant expiresAt) {
    this.client = client;
    this.config = config;
    this.id = id;
    this.expiresAt = expiresAt;
  }

  /** Creates a sandbox on the configured server; refuses settings the server cannot take. */
  public static Sandbox create(SandboxConfig config) {
    RemoteServer server = config.remote();
    if (server == null) {
      throw new IllegalArgumentException("not a remote configuration");
    }
    refuseLocalOnly(config);
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("image", config.image());
    body.put("memoryBytes", config.memoryBytes());
    body.put("cpus", config.cpus());
    body.put("ttlSeconds", config.ttl().toSeconds());
    if (!config.env().isEmpty()) {
      ObjectNode env = body.putObject("env");
      config.env().forEach(env::put);
    }
    if (!config.network().isNone()) {
      var hosts = body.putArray("allowHosts");
      config.network().rules().forEach(hosts::add);
    }
    if (config.approvals().equals(ApprovalPolicy.recommended())) {
      // The server's approvals queue asks the tenant (GET/POST /v1/approvals).
      body.put("approvals", "recommended");
    }
    RemoteClient client = new RemoteClient(server);
    JsonNode made = client.json("POST", "/v1/sandboxes", body, config.startTimeout().plus(SLACK));
    return new RemoteSandbox(
        client, config, made.path("id").asText(), Instant.parse(made.path("expiresAt").asText()));
  }

  // Settings that act on this host (listeners, handlers, a local audit log) or that the HTTP API
  // does not carry yet: refusing them is fail-closed, silently dropping them would not be.
  private static void refuseLocalOnly(SandboxConfig c) {
    List<String> refused = new ArrayList<>();
    if (!c.secretEnv().isEmpty()) {
      refused.add("secretEnv (secret environment variables)");
    }
    if (c.approvalHandler() != null) {
      refused.add("approvalHandler (the server's approvals queue answers: GET/POST /v1/approvals)");
    }
    // Rules the server cannot take would otherwise be dropped, and their operations go ahead.
    if (!c.approvals().isInactive() && !c.approvals().equals(ApprovalPolicy.recommended())) {
      refused.add("approval rules other than ApprovalPolicy.recommended()");
    }
    if (!c.networkListeners().isEmpty()) {
      refused.add("onNetworkEvent listeners");
    }
    if (c.auditLog() != null) {
      refused.add("auditLog (the server keeps the audit)");
    }
    if (!c.labels().isEmpty()) {
      refused.add("labels");
    }
    if (c.runtime() != null) {
      refused.add("runtime (the server chooses it)");
    }
    if (!refused.isEmpty()) {
      throw new UnsupportedControlException(
          "a remote sandbox cannot take "
              + String.join(", ", refused)
              + ": remove them from the configuration, or create the sandbox locally");
    }
  }

  static UnsupportedControlException unsupported(String what) {
    return new UnsupportedControlException(
        "remote sandboxes do not support "
            + what
            + " yet (the server's HTTP API does not carry"
            + " it; see docs/server.md): run it on a local sandbox");
  }

  private String path(String rest) {
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
    return result(client.json("POST", path("/code"), body, timeout));
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
    return result(client.json("POST", path("/exec"), body, timeout));
  }

  private Duration timeout(ObjectNode body, ExecOptions options) {
    Duration t = options.timeout();
    if (t != null) {
      body.put("timeoutSeconds", Math.max(1, (t.toMillis() + 999) / 1000));
      return t.plus(SLACK);
    }
    return config.execTimeout().plus(SLACK);
  }

  private static void refuseOptions(ExecOptions o, boolean python) {
    if (o.onOutput() != null) {
      throw unsupported("ExecOptions.onOutput (stream with the HTTP API's server-sent events)");
    }
    if (o.maxOutputBytes() != null) {
      throw unsupported("ExecOptions.maxOutputBytes (the server's limit applies)");
    }
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
    throw unsupported("start (streamed executions)");
  }

  @Override
  public Execution start(List<String> argv, ExecOptions options) {
    throw unsupported("start (streamed executions)");
  }

  @Override
  public Execution startCode(String code, ExecOptions options) {
    throw unsupported("startCode (streamed executions)");
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
    return adopt(client, config, made.path("sandbox"));
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
    return Optional.empty();
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

  @Override
  public List<Artifact> exportArtifacts(String glob, Path hostDir) {
    throw unsupported("exportArtifacts");
  }

  @Override
  public List<Artifact> upload(Path hostPath, String sandboxPath) {
    throw unsupported("upload of host trees (use files().write per file)");
  }

  @Override
  public List<Artifact> uploadArchive(Path tarFile, String sandboxPath) {
    throw unsupported("uploadArchive");
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
    JsonNode s = client.json("POST", path("/snapshots"), body, FORK);
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
    return adopt(client, config, made);
  }

  private static RemoteSandbox adopt(RemoteClient client, SandboxConfig config, JsonNode made) {
    return new RemoteSandbox(
        client, config, made.path("id").asText(), Instant.parse(made.path("expiresAt").asText()));
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
        client.bytes("DELETE", path(""), new byte[0], null, Duration.ofSeconds(60));
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
