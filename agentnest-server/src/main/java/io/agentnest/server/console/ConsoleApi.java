package io.agentnest.server.console;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.VerifyReport;
import io.agentnest.server.approvals.ApprovalQueue;
import io.agentnest.server.approvals.ApproverRole;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.Bodies;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Exchange;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.ExecutionTaps;
import io.agentnest.server.service.Registry;
import io.agentnest.server.tenancy.KeyRole;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The web console under {@code /console}: static pages from the jar (no build step, no framework)
 * and sign-in/out. Everything else the page does goes through the ordinary /v1 routes with the
 * session cookie (and its CSRF token on changes), so the console has no API of its own to keep
 * apart from the real one; {@code /console/events} pushes the tenant's approvals and sandboxes as
 * server-sent events. Every console response forbids framing and any script but its own.
 */
public final class ConsoleApi {
  /** Assets the console serves, and their types: nothing else under /console is a file. */
  static final Map<String, String> ASSETS =
      Map.of(
          "index.html", "text/html; charset=utf-8",
          "app.js", "text/javascript; charset=utf-8",
          "text.js", "text/javascript; charset=utf-8",
          "app.css", "text/css; charset=utf-8");

  /** Event streams one tenant may hold open (each holds a request thread). */
  static final int MAX_STREAMS_PER_TENANT = 16;

  /** How long one event stream lasts before the browser reconnects (EventSource does). */
  static final long STREAM_MILLIS = 10 * 60_000;

  static final long TICK_MILLIS = 500;

  /** The largest sign-in body read: {"key": "..."} with room to spare. */
  static final long SIGN_IN_MAX_BYTES = 4096;

  private final ConsoleSessions sessions;
  private final BiFunction<String, Context, ConsoleSessions.SignedIn> signIn;
  private final Consumer<String> active;
  private final ApprovalQueue approvals;
  private final Registry registry;
  private final ExecutionTaps taps;
  private final Function<Registry.Entry, Wire.SandboxView> views;
  private final long maxJson;
  private final Map<String, AtomicInteger> streams = new ConcurrentHashMap<>();

  public ConsoleApi(
      ConsoleSessions sessions,
      BiFunction<String, Context, ConsoleSessions.SignedIn> signIn,
      Consumer<String> active,
      ApprovalQueue approvals,
      Registry registry,
      ExecutionTaps taps,
      Function<Registry.Entry, Wire.SandboxView> views,
      long maxJson) {
    this.sessions = sessions;
    this.signIn = signIn;
    this.active = active;
    this.approvals = approvals;
    this.registry = registry;
    this.taps = taps;
    this.views = views;
    this.maxJson = maxJson;
  }

  static void secureHeaders(Context ctx) {
    ctx.header(
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
            + " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    ctx.header("X-Content-Type-Options", "nosniff");
    ctx.header("X-Frame-Options", "DENY");
    ctx.header("Referrer-Policy", "no-referrer");
    ctx.header("Cache-Control", "no-store");
  }

  public void asset(Context ctx) {
    String path = ctx.path().substring("/console".length());
    String name = path.isEmpty() || path.equals("/") ? "index.html" : path.substring(1);
    secureHeaders(ctx);
    if (path.isEmpty()) {
      ctx.redirect("/console/");
      return;
    }
    String type = ASSETS.get(name);
    if (type == null) {
      Exchange.send(ctx, ApiException.notFound("console page '" + Escape.id(name) + "'"));
      return;
    }
    try (InputStream in = ConsoleApi.class.getResourceAsStream("/console/" + name)) {
      if (in == null) {
        throw new IllegalStateException("console asset " + name + " is missing from the jar");
      }
      ctx.status(200);
      ctx.contentType(type);
      ctx.result(in.readAllBytes());
    } catch (IOException e) {
      throw new IllegalStateException("cannot read console asset " + name, e);
    }
  }

  /** POST /console/session {key}: signs in; answers the tenant and the CSRF token. */
  public void open(Context ctx) {
    secureHeaders(ctx);
    SignInGuard.check(ctx);
    JsonNode body;
    try {
      // A key is under 100 bytes: an unauthenticated body gets a small cap, not max_json.
      body = Wire.JSON.readTree(Bodies.read(ctx, Math.min(maxJson, SIGN_IN_MAX_BYTES)));
    } catch (IOException e) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON, "the body is not JSON", "send {\"key\": \"ank_...\"}");
    }
    String key = body == null ? null : body.path("key").asText(null);
    if (key == null || key.isBlank()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, "the key is missing", "send {\"key\": \"ank_...\"}");
    }
    ConsoleSessions.Session s = sessions.open(ctx, signIn.apply(key.strip(), ctx));
    Exchange.json(ctx, 201, view(s));
  }

  /** GET /console/session: who is signed in (a reloaded page asks). */
  public void current(Context ctx) {
    secureHeaders(ctx);
    Exchange.json(ctx, 200, view(session(ctx)));
  }

  /** DELETE /console/session: signs out. */
  public void close(Context ctx) {
    secureHeaders(ctx);
    ConsoleSessions.Session s = session(ctx);
    ConsoleSessions.checkCsrf(ctx, s);
    sessions.close(ctx, s);
    ctx.status(204);
  }

  private ConsoleSessions.Session session(Context ctx) {
    ConsoleSessions.Session s = sessions.of(ctx);
    if (s == null) {
      throw new ApiException(
          401, ErrorCode.UNAUTHENTICATED, "not signed in", "sign in with a tenant key");
    }
    if (!s.admin()) {
      active.accept(s.tenant);
    }
    return s;
  }

  private static Map<String, Object> view(ConsoleSessions.Session s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("tenant", s.admin() ? "admin (all tenants)" : s.tenant);
    m.put("admin", s.admin());
    m.put("role", s.admin() ? "admin" : s.role.label());
    m.put("csrf", s.csrf);
    return m;
  }

  /**
   * GET /console/events: the tenant's (the admin: every tenant's) waiting approvals and sandboxes
   * as server-sent events, sent when they change (checked twice a second) and as a comment every 15
   * s; the stream ends after {@link #STREAM_MILLIS} or when the browser goes away.
   */
  public void events(Context ctx) {
    secureHeaders(ctx);
    ConsoleSessions.Session s = session(ctx);
    AtomicInteger open = admit(s);
    try {
      OutputStream out = eventStream(ctx);
      long end = System.currentTimeMillis() + STREAM_MILLIS;
      long lastPing = 0;
      @Nullable String lastApprovals = null;
      @Nullable String lastSandboxes = null;
      while (System.currentTimeMillis() < end && sessions.of(ctx) != null) {
        String a =
            new String(
                Wire.write(approvals.views(s.admin() ? null : s.tenant)), StandardCharsets.UTF_8);
        if (!a.equals(lastApprovals)) {
          send(out, "approvals", a);
          lastApprovals = a;
        }
        List<Wire.SandboxView> boxes = new ArrayList<>();
        for (Registry.Entry e : s.admin() ? registry.all() : registry.list(s.tenant)) {
          boxes.add(views.apply(e));
        }
        String b = new String(Wire.write(boxes), StandardCharsets.UTF_8);
        if (!b.equals(lastSandboxes)) {
          send(out, "sandboxes", b);
          lastSandboxes = b;
        }
        long now = System.currentTimeMillis();
        if (now - lastPing > 15_000) {
          out.write(": ping\n\n".getBytes(StandardCharsets.US_ASCII));
          out.flush();
          lastPing = now;
        }
        Thread.sleep(TICK_MILLIS);
      }
    } catch (IOException gone) {
      // the browser closed the page
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      open.decrementAndGet();
    }
  }

  private AtomicInteger admit(ConsoleSessions.Session s) {
    AtomicInteger open = streams.computeIfAbsent(s.tenant, k -> new AtomicInteger());
    if (open.incrementAndGet() > MAX_STREAMS_PER_TENANT) {
      open.decrementAndGet();
      throw new ApiException(
          429,
          ErrorCode.QUOTA,
          "quota 'console_streams' is full: limit " + MAX_STREAMS_PER_TENANT,
          "close other console tabs of this tenant");
    }
    return open;
  }

  /**
   * GET /console/executions?sandbox=ID: the sandbox's recent executions as server-sent {@code run}
   * events, each sent again whenever its output grows or it ends (checked four times a second);
   * {@code gone} when the sandbox is.
   */
  public void executions(Context ctx) {
    secureHeaders(ctx);
    ConsoleSessions.Session s = session(ctx);
    if (s.role == KeyRole.APPROVER) {
      // Executions carry the sandbox's output: an approver judges from the question and the audit.
      throw ApproverRole.refused("watch a sandbox's executions");
    }
    String id = ctx.queryParam("sandbox");
    if (id == null || id.isEmpty()) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, "the sandbox query parameter is missing", "add ?sandbox=ID");
    }
    if (s.admin()) {
      registry.getAny(id);
    } else {
      registry.get(s.tenant, id);
    }
    AtomicInteger open = admit(s);
    try {
      OutputStream out = eventStream(ctx);
      Map<Long, Long> sent = new LinkedHashMap<>();
      long end = System.currentTimeMillis() + STREAM_MILLIS;
      long lastPing = System.currentTimeMillis();
      while (System.currentTimeMillis() < end && sessions.of(ctx) != null) {
        if (!registry.contains(id)) {
          send(out, "gone", "{}");
          return;
        }
        for (ExecutionTaps.Run r : taps.runs(id)) {
          long v = r.version();
          Long had = sent.get(r.id);
          if (had == null || had != v) {
            send(out, "run", new String(Wire.write(r.view()), StandardCharsets.UTF_8));
            sent.put(r.id, v);
          }
        }
        long now = System.currentTimeMillis();
        if (now - lastPing > 15_000) {
          out.write(": ping\n\n".getBytes(StandardCharsets.US_ASCII));
          out.flush();
          lastPing = now;
        }
        Thread.sleep(250);
      }
    } catch (IOException gone) {
      // the browser closed the page
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      open.decrementAndGet();
    }
  }

  /** Starts a server-sent event stream; the browser retries 2 s after it ends. */
  private static OutputStream eventStream(Context ctx) throws IOException {
    ctx.status(200);
    ctx.contentType("text/event-stream");
    ctx.header("X-Accel-Buffering", "no");
    OutputStream out = ctx.res().getOutputStream();
    out.write("retry: 2000\n\n".getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return out;
  }

  private static void send(OutputStream out, String event, String json) throws IOException {
    // JSON from Jackson has no raw newline, so one data line carries it whole.
    out.write(("event: " + event + "\ndata: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  /** GET /v1/audit/verify: the server's whole chain, re-read and checked. */
  public static void verify(Context ctx) {
    VerifyReport r = AuditLog.shared().verify();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("ok", r.ok());
    m.put("checked", r.checked());
    m.put("problem", r.problem());
    m.put("line", r.line());
    m.put("seq", r.seq());
    Exchange.json(ctx, 200, m);
  }
}
