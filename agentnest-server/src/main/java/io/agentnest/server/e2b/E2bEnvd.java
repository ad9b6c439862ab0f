package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.FileInfo;
import io.agentnest.SandboxFiles;
import io.agentnest.WorkspacePaths;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.e2b.E2bConnect.Code;
import io.agentnest.server.e2b.E2bConnect.RpcException;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.MemoryBudget;
import io.agentnest.server.http.OpenStreams;
import io.agentnest.server.http.Tokens;
import io.agentnest.server.http.Transfers;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.ExecutionTaps;
import io.agentnest.server.service.Registry;
import io.agentnest.server.service.SandboxService;
import io.agentnest.server.tenancy.Tenant;
import io.javalin.http.Context;
import io.javalin.http.UploadedFile;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A sandbox's own services as the E2B SDKs reach them when {@code E2B_SANDBOX_URL} points here:
 * every request names its sandbox and port in the {@code E2b-Sandbox-Id} / {@code E2b-Sandbox-Port}
 * headers and carries the sandbox's access token, which this server issued at create and compares
 * in constant time. Port 49983 is envd (the process and filesystem services over Connect, {@code
 * /files} over plain HTTP), port 49999 the code interpreter. Everything runs through the ordinary
 * Sandbox API, so policy, limits, audit and approvals are the same as on /v1.
 */
public final class E2bEnvd {
  private static final Logger LOG = LoggerFactory.getLogger(E2bEnvd.class);

  public static final String PREFIX = "/e2b/sandbox";
  public static final int ENVD_PORT = 49983;
  static final int INTERPRETER_PORT = 49999;

  /** Longest a command started through the SDK may run (the same bound as /v1 exec). */
  static final Duration MAX_COMMAND = Duration.ofHours(1);

  private static final long MAX_KEEPALIVE_MS = 30_000;

  /** Finds the tenant a sandbox belongs to, refusing one that is gone or revoked, rate-limited. */
  public interface Tenants {
    Tenant active(String name, Context ctx);

    /** Counts a refused token against the client address (429 when it keeps failing). */
    void refused(Context ctx);
  }

  private final ServerConfig config;
  private final Registry registry;
  private final E2bSandboxes sandboxes;
  private final Tenants tenants;
  private final SandboxService api;
  private final E2bCodeInterpreter interpreter;

  public E2bEnvd(
      ServerConfig config,
      Registry registry,
      E2bSandboxes sandboxes,
      Tenants tenants,
      SandboxService api,
      E2bCodeInterpreter interpreter) {
    this.config = config;
    this.registry = registry;
    this.sandboxes = sandboxes;
    this.tenants = tenants;
    this.api = api;
    this.interpreter = interpreter;
  }

  private record Target(Registry.Entry entry, E2bSandboxes.State state, Tenant tenant, int port) {}

  /** Every method and path under {@link #PREFIX}. */
  public void handle(Context ctx) {
    String path = ctx.path().substring(PREFIX.length());
    boolean rpc =
        path.startsWith("/process.Process/") || path.startsWith("/filesystem.Filesystem/");
    boolean stream =
        rpc
            && (path.endsWith("/Start")
                || path.endsWith("/Connect")
                || path.endsWith("/WatchDir")
                || path.endsWith("/StreamInput"));
    try {
      Target t = target(ctx);
      if (t.port == INTERPRETER_PORT) {
        interpreter(ctx, t, path);
      } else if (rpc) {
        rpc(ctx, t, path, stream);
      } else {
        envdHttp(ctx, t, path);
      }
    } catch (RuntimeException e) {
      fail(ctx, e, rpc, stream);
    }
  }

  private void fail(Context ctx, RuntimeException e, boolean rpc, boolean stream) {
    if (rpc) {
      RpcException r = E2bErrors.rpc(e);
      if (stream) {
        try {
          new E2bConnect.Stream(ctx).end(r);
        } catch (IOException gone) {
          // the client is gone; nothing to tell it
        }
      } else {
        E2bConnect.unaryError(ctx, r);
      }
      return;
    }
    E2bErrors.HttpError h = E2bErrors.http(e);
    Exchange.json(ctx, h.status, E2bWire.restError(h.status, String.valueOf(h.getMessage())));
  }

  private Target target(Context ctx) {
    String id = ctx.header("E2b-Sandbox-Id");
    String portHeader = ctx.header("E2b-Sandbox-Port");
    if (id == null || portHeader == null) {
      throw new E2bErrors.HttpError(
          400,
          "the E2b-Sandbox-Id and E2b-Sandbox-Port headers are missing: point E2B_SANDBOX_URL at"
              + " this server's /e2b/sandbox and use an E2B SDK, which sends them");
    }
    int port;
    try {
      port = Integer.parseInt(portHeader.strip());
    } catch (NumberFormatException e) {
      throw new E2bErrors.HttpError(
          400, "E2b-Sandbox-Port '" + Escape.id(portHeader) + "' is not a port");
    }
    if (port != ENVD_PORT && port != INTERPRETER_PORT) {
      throw new E2bErrors.HttpError(
          502,
          "port "
              + port
              + " of the sandbox is not served: AgentNest exposes no sandbox ports, only its"
              + " command, file and code services");
    }
    E2bSandboxes.State s = sandboxes.get(id);
    // The token first, and one answer for an unknown id and a wrong token: before it, nobody
    // learns whether an id exists, is paused or has gone (issue 42, LOW 18).
    if (s == null || !tokenFits(ctx, s, port)) {
      tenants.refused(ctx);
      throw new E2bErrors.HttpError(
          401,
          "no running sandbox '"
              + Escape.id(id)
              + "' takes this access token: use the envdAccessToken this server returned when the"
              + " sandbox was created (a killed or timed-out sandbox takes none)");
    }
    if (!sandboxes.honoured(s)) {
      // The token was right but a key it was handed to is revoked or expired: it ends with it.
      tenants.refused(ctx);
      throw new E2bErrors.HttpError(
          401,
          "the sandbox access token was handed to an API key that is revoked or expired: connect"
              + " again (Sandbox.connect) with an active key for new tokens");
    }
    if (s.paused()) {
      throw new E2bErrors.HttpError(
          502, "sandbox " + Escape.id(id) + " is paused: resume it with Sandbox.connect(id)");
    }
    Registry.Entry e = entryOrNull(s.tenant, s.sandboxId);
    if (e == null) {
      sandboxes.remove(id);
      throw new E2bErrors.HttpError(
          502, "sandbox " + Escape.id(id) + " is not running (killed or timed out)");
    }
    return new Target(e, s, tenants.active(s.tenant, ctx), port);
  }

  private static boolean tokenFits(Context ctx, E2bSandboxes.State s, int port) {
    E2bSandboxes.Grant g = s.grant;
    return Tokens.same(ctx.header("X-Access-Token"), g.envdToken())
        || (port == INTERPRETER_PORT
            && Tokens.same(ctx.header("E2B-Traffic-Access-Token"), g.trafficToken()));
  }

  private Registry.@Nullable Entry entryOrNull(String tenant, String id) {
    try {
      return registry.get(tenant, id);
    } catch (ApiException gone) {
      return null;
    }
  }

  // ---- the code interpreter -----------------------------------------------------------------

  private void interpreter(Context ctx, Target t, String path) {
    String method = ctx.method().name();
    if (method.equals("POST") && path.equals("/execute")) {
      api.countExecution(t.tenant);
      interpreter.execute(ctx, t.entry, t.state, Bodies.read(ctx, config.maxJsonBytes()));
    } else if (method.equals("POST") && path.equals("/contexts")) {
      interpreter.createContext(ctx, t.entry, t.state, Bodies.read(ctx, config.maxJsonBytes()));
    } else if (method.equals("GET") && path.equals("/contexts")) {
      interpreter.listContexts(ctx, t.state);
    } else if (method.equals("DELETE") && path.startsWith("/contexts/")) {
      interpreter.removeContext(ctx, t.entry, t.state, path.substring("/contexts/".length()));
    } else if (method.equals("POST")
        && path.startsWith("/contexts/")
        && path.endsWith("/restart")) {
      String id = path.substring("/contexts/".length(), path.length() - "/restart".length());
      interpreter.restartContext(ctx, t.entry, t.state, id);
    } else if (method.equals("GET") && path.equals("/health")) {
      ctx.status(200).result("OK");
    } else {
      throw new E2bErrors.HttpError(
          404, "the code interpreter has no " + method + " " + Escape.id(path));
    }
  }

  // ---- envd over plain HTTP -----------------------------------------------------------------

  private void envdHttp(Context ctx, Target t, String path) {
    String method = ctx.method().name();
    if (path.equals("/health") && method.equals("GET")) {
      ctx.status(204);
    } else if (path.equals("/files") && method.equals("GET")) {
      refuseRoot(ctx.queryParam("username"));
      String p = workspace(ctx.queryParam("path"));
      Transfers.download(ctx, t.entry.sandbox().files(), p, config.maxBodyBytes());
    } else if (path.equals("/files") && method.equals("POST")) {
      refuseRoot(ctx.queryParam("username"));
      upload(ctx, t);
    } else {
      throw new E2bErrors.HttpError(404, "envd has no " + method + " " + Escape.id(path));
    }
  }

  private void upload(Context ctx, Target t) {
    String type = ctx.header("Content-Type");
    SandboxFiles files = t.entry.sandbox().files();
    List<ObjectNode> written = new ArrayList<>();
    if (type != null && type.toLowerCase(Locale.ROOT).startsWith("multipart/")) {
      List<UploadedFile> parts = multipart(ctx);
      if (parts.isEmpty()) {
        throw new E2bErrors.HttpError(400, "the multipart body has no 'file' part");
      }
      String query = ctx.queryParam("path");
      for (UploadedFile f : parts) {
        String target = query != null && parts.size() == 1 ? query : f.filename();
        String p = workspace(target);
        // The part is on disk already (the parser stages parts over 64 KiB): it is sent on
        // from there, chunk by chunk.
        try (InputStream in = f.content()) {
          written.add(writeInfo(files.write(p, in)));
        } catch (IOException e) {
          throw new E2bErrors.HttpError(400, "the upload could not be read: " + e.getMessage());
        }
      }
    } else {
      String p = workspace(ctx.queryParam("path"));
      boolean gzip = "gzip".equalsIgnoreCase(ctx.header("Content-Encoding"));
      written.add(writeInfo(Transfers.upload(ctx, files, p, config.maxBodyBytes(), gzip)));
    }
    Exchange.json(ctx, 200, written);
  }

  /**
   * The parts of a multipart upload, held to max_body: a declared larger body is refused before any
   * of it is read or stored, a larger one without a length when the parser passes the bound
   * (multipartConfig in {@code AgentNestServer.start}).
   */
  private List<UploadedFile> multipart(Context ctx) {
    long max = config.maxBodyBytes();
    if (Bodies.declaredOver(ctx, max)) {
      throw tooLarge(max); // nothing was stored
    }
    long declared = ctx.req().getContentLengthLong();
    // The parser stages parts over 64 KiB on disk: the spool budget counts them.
    MemoryBudget.reserveSpool(ctx, declared >= 0 ? declared : max, "an upload body");
    try {
      return ctx.uploadedFiles("file");
    } catch (Exception e) { // the servlet's checked ServletException arrives undeclared
      String why = "";
      for (Throwable c = e; c != null; c = c.getCause()) {
        String m = String.valueOf(c.getMessage()).toLowerCase(Locale.ROOT);
        if (m.contains("exceeds") || m.contains("too large") || m.contains("max")) {
          throw tooLarge(max);
        }
        why = String.valueOf(c.getMessage());
      }
      // e.g. a NUL in a part's file name ("invalid byte 0"), which answered 500
      throw new E2bErrors.HttpError(
          400,
          "the multipart body is not valid ("
              + Escape.id(why)
              + "): send a form whose part headers and file names are printable");
    }
  }

  private static E2bErrors.HttpError tooLarge(long max) {
    return new E2bErrors.HttpError(
        413,
        "the upload is over the server's max_body of "
            + max
            + " bytes: send smaller files (or ask the operator to raise max_body)");
  }

  private static ObjectNode writeInfo(FileInfo f) {
    ObjectNode n = Wire.JSON.createObjectNode();
    n.put("name", E2bWire.name(f.path()));
    n.put("type", f.isDirectory() ? "dir" : "file");
    n.put("path", E2bWire.toE2b(f.path()));
    return n;
  }

  private static void refuseRoot(@Nullable String user) {
    if (user != null && user.equals("root")) {
      throw new E2bErrors.HttpError(
          403,
          "user 'root' is not available: everything in an AgentNest sandbox runs as its"
              + " unprivileged user; leave user unset");
    }
  }

  // ---- envd's Connect services --------------------------------------------------------------

  private void rpc(Context ctx, Target t, String path, boolean stream) {
    switch (path) {
      case "/process.Process/Start" -> start(ctx, t);
      case "/process.Process/Connect" -> connect(ctx, t);
      case "/process.Process/List" -> {
        E2bConnect.readUnary(ctx, config.maxJsonBytes());
        E2bConnect.unary(ctx, t.state.processes.list());
      }
      case "/process.Process/SendSignal" -> {
        t.state.processes.signal(E2bConnect.readUnary(ctx, config.maxJsonBytes()));
        E2bConnect.unary(ctx, Map.of());
      }
      case "/process.Process/CloseStdin" -> {
        // Commands here read no stdin (it is closed from the start): closing it is done already.
        t.state.processes.select(E2bConnect.readUnary(ctx, config.maxJsonBytes()));
        E2bConnect.unary(ctx, Map.of());
      }
      case "/process.Process/SendInput", "/process.Process/StreamInput" ->
          throw E2bConnect.error(
              Code.UNIMPLEMENTED,
              "interactive stdin is not served: AgentNest commands read no stdin; pipe the input"
                  + " in the command line or write it to a file first");
      case "/process.Process/Update" ->
          throw E2bConnect.error(
              Code.UNIMPLEMENTED, "pseudo-terminals are not served, so there is nothing to resize");
      case "/filesystem.Filesystem/Stat" -> {
        String p = workspace(field(ctx, "path"));
        E2bConnect.unary(ctx, entry(t.entry.sandbox().files().stat(p)));
      }
      case "/filesystem.Filesystem/ListDir" -> listDir(ctx, t);
      case "/filesystem.Filesystem/MakeDir" -> {
        String p = workspace(field(ctx, "path"));
        SandboxFiles files = t.entry.sandbox().files();
        if (files.exists(p)) {
          throw E2bConnect.error(Code.ALREADY_EXISTS, "'" + E2bWire.toE2b(p) + "' already exists");
        }
        E2bConnect.unary(ctx, entry(files.mkdir(p)));
      }
      case "/filesystem.Filesystem/Remove" -> {
        String p = WorkspacePaths.checkEntry(workspace(field(ctx, "path")));
        t.entry.sandbox().files().deleteRecursive(p);
        E2bConnect.unary(ctx, Map.of());
      }
      case "/filesystem.Filesystem/Move" -> move(ctx, t);
      default ->
          throw E2bConnect.error(
              Code.UNIMPLEMENTED,
              Escape.id(path.substring(1))
                  + " is not served: watching directories and other calls are listed in"
                  + " docs/e2b.md");
    }
  }

  private String field(Context ctx, String name) {
    ObjectNode req = E2bConnect.readUnary(ctx, config.maxJsonBytes());
    String v = E2bWire.text(req, name);
    if (v == null) {
      throw E2bConnect.error(Code.INVALID_ARGUMENT, "field '" + name + "' is missing");
    }
    return v;
  }

  private static ObjectNode entry(FileInfo f) {
    ObjectNode n = Wire.JSON.createObjectNode();
    n.set("entry", E2bWire.entry(f));
    return n;
  }

  private void listDir(Context ctx, Target t) {
    ObjectNode req = E2bConnect.readUnary(ctx, config.maxJsonBytes());
    String p = workspace(E2bWire.text(req, "path"));
    int depth = Math.max(1, req.path("depth").asInt(1));
    SandboxFiles files = t.entry.sandbox().files();
    List<FileInfo> found = depth == 1 ? files.list(p) : files.listRecursive(p);
    int base = p.isEmpty() ? 0 : p.split("/").length;
    ObjectNode out = Wire.JSON.createObjectNode();
    var entries = out.putArray("entries");
    for (FileInfo f : found) {
      if (f.path().split("/").length - base <= depth) {
        entries.add(E2bWire.entry(f));
      }
    }
    E2bConnect.unary(ctx, out);
  }

  private void move(Context ctx, Target t) {
    ObjectNode req = E2bConnect.readUnary(ctx, config.maxJsonBytes());
    String from = WorkspacePaths.checkEntry(workspace(E2bWire.text(req, "source")));
    String to = WorkspacePaths.checkEntry(workspace(E2bWire.text(req, "destination")));
    // A move onto an existing file deletes that file: it runs as a plain mv, which the sandbox's
    // approval rules treat as a deletion (it asks under 'recommended'). Onto nothing, -n keeps
    // whatever appears there meanwhile, and nothing is asked.
    boolean replaces = t.entry.sandbox().files().exists(to);
    List<String> argv = new ArrayList<>(List.of("mv", "-T"));
    if (!replaces) {
      argv.add("-n");
    }
    argv.addAll(List.of("--", "/workspace/" + from, "/workspace/" + to));
    ExecResult r =
        t.entry.sandbox().exec(argv, ExecOptions.builder().timeout(Duration.ofSeconds(30)).build());
    if (r.ok() && !replaces && t.entry.sandbox().files().exists(from)) {
      throw E2bConnect.error(
          Code.ALREADY_EXISTS,
          "'" + E2bWire.toE2b(to) + "' appeared while moving: nothing was replaced; move again");
    }
    if (!r.ok()) {
      throw E2bConnect.error(
          r.stderr().contains("No such file") ? Code.NOT_FOUND : Code.FAILED_PRECONDITION,
          "moving '" + E2bWire.toE2b(from) + "' failed: " + r.stderr().strip());
    }
    E2bConnect.unary(ctx, entry(t.entry.sandbox().files().stat(to)));
  }

  private void start(Context ctx, Target t) {
    ObjectNode req = E2bConnect.readStreamRequest(ctx, config.maxJsonBytes());
    String auth = ctx.header("Authorization");
    if (auth != null && auth.regionMatches(true, 0, "Basic ", 0, 6)) {
      String user = basicUser(auth.substring(6).strip());
      if (user.equals("root")) {
        throw E2bConnect.error(
            Code.PERMISSION_DENIED,
            "user 'root' is not available: commands in an AgentNest sandbox run as its"
                + " unprivileged user; leave user unset");
      }
    }
    api.countExecution(t.tenant);
    E2bProcesses.Command c = E2bProcesses.parse(req);
    JsonNode process = req.get("process");
    ExecOptions.Builder o =
        ExecOptions.builder()
            .timeout(E2bProcesses.timeout(ctx.header("Connect-Timeout-Ms"), MAX_COMMAND));
    String cwd = E2bWire.text(process, "cwd");
    if (cwd != null && !cwd.isEmpty()) {
      o.workdir(
          cwd.startsWith(E2bWire.HOME) || cwd.startsWith("/workspace")
              ? E2bWire.toWorkspace(cwd)
              : cwd);
    }
    Map<String, String> envs = E2bWire.stringMap(process, "envs");
    if (!envs.isEmpty()) {
      o.env(envs);
    }
    // The console's live view shows commands started through the E2B face too.
    ExecutionTaps.Run run =
        api.taps()
            .start(
                t.entry.sandbox().id(),
                "e2b",
                c.shell() != null ? c.shell() : String.join(" ", c.argv()));
    o.onOutput(run::output);
    E2bProcesses.Proc p;
    try {
      p = t.state.processes.start(req, c, o.build());
    } catch (RuntimeException refused) {
      run.finish(null, refused);
      throw refused;
    }
    p.execution.result().whenComplete(run::finish);
    BlockingQueue<ObjectNode> q = t.state.processes.attach(p);
    t.state.processes.pump(p);
    follow(ctx, t, p, q);
  }

  private void connect(Context ctx, Target t) {
    ObjectNode req = E2bConnect.readStreamRequest(ctx, config.maxJsonBytes());
    E2bProcesses.Proc p = t.state.processes.select(req);
    follow(ctx, t, p, t.state.processes.attach(p));
  }

  /** Streams a command's events to this client until it ends or the client goes away. */
  private void follow(Context ctx, Target t, E2bProcesses.Proc p, BlockingQueue<ObjectNode> q) {
    long keepalive = keepaliveMs(ctx.header("Keepalive-Ping-Interval"));
    try {
      E2bConnect.Stream s = new E2bConnect.Stream(ctx);
      s.send(E2bProcesses.startEvent(p.pid));
      boolean ended = false;
      long quietSince = System.nanoTime();
      while (!ended) {
        // Woken at least every OpenStreams.CHECK_MILLIS: a stream whose access token's key was
        // revoked meanwhile is cut (issue 42, item 5), not only the token's next request.
        ObjectNode ev = E2bProcesses.next(q, Math.min(keepalive, OpenStreams.CHECK_MILLIS));
        if (!sandboxes.honoured(t.state)) {
          s.end(
              E2bConnect.error(
                  Code.UNAUTHENTICATED,
                  "the API key that received this sandbox's access token was revoked (or"
                      + " expired): the stream is ended; the command still runs until killed or"
                      + " timed out"));
          return;
        }
        if (ev == null) {
          if (System.nanoTime() - quietSince >= TimeUnit.MILLISECONDS.toNanos(keepalive)) {
            s.send(E2bProcesses.keepalive());
            quietSince = System.nanoTime();
          }
        } else if (E2bProcesses.isEnd(ev)) {
          ended = true;
        } else {
          s.send(ev);
          quietSince = System.nanoTime();
        }
      }
      s.end(
          p.done
              ? null
              : E2bConnect.error(
                  Code.RESOURCE_EXHAUSTED,
                  "this stream fell "
                      + E2bProcesses.STREAM_QUEUE
                      + " events behind and was ended; the"
                      + " command still runs: reconnect with commands.connect(pid)"));
    } catch (IOException gone) {
      // The client went away: the command keeps running, as on E2B; it can be reconnected or
      // killed by pid, and its timeout still bounds it.
      LOG.debug("client left the stream of process {} in {}", p.pid, t.state.id);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      t.state.processes.detach(p, q);
    }
  }

  private static long keepaliveMs(@Nullable String header) {
    if (header == null) {
      return MAX_KEEPALIVE_MS;
    }
    try {
      long s = Long.parseLong(header.strip());
      return Math.max(1_000, Math.min(MAX_KEEPALIVE_MS, s * 1000));
    } catch (NumberFormatException e) {
      return MAX_KEEPALIVE_MS;
    }
  }

  private static String basicUser(String b64) {
    try {
      String decoded = new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
      int colon = decoded.indexOf(':');
      return colon < 0 ? decoded : decoded.substring(0, colon);
    } catch (IllegalArgumentException e) {
      throw E2bConnect.error(Code.INVALID_ARGUMENT, "the Authorization header is not valid Basic");
    }
  }

  private static String workspace(@Nullable String path) {
    return E2bWire.toWorkspace(path);
  }
}
