package io.agentnest.internal.egress;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.IpAddresses;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.internal.support.Bounded;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.commons.io.IOUtils;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host side of a sandbox's network egress: an HTTP proxy that serves one client connection per
 * {@link #handle} call, on a pair of streams (the agent channel tunnels each TCP connection that
 * code in the sandbox opens to its local proxy port; {@link LoopbackProxyServer} adapts sockets).
 *
 * <p>It understands {@code CONNECT host:port} (tunnels, e.g. for HTTPS) and plain HTTP requests in
 * absolute form ({@code GET http://host/path}), one request per connection. Each target is checked
 * against the {@link NetworkPolicy}: IP-literal targets only when {@code allowAddress} covers them;
 * names must match a rule (or be approved by the {@link ApprovalHandler} in ASK mode); the proxy
 * then resolves the name itself, refuses it when any address is not public (unless {@code
 * allowAddress} covers it) and connects only to an address it validated, so DNS rebinding cannot
 * redirect it. A tunnel to a name must then carry a TLS ClientHello asking for that same name
 * ({@link SniCheck}), so that a shared front end cannot be asked for another one (domain fronting).
 * Every attempt produces exactly one {@link NetworkEvent}.
 *
 * <p>Thread-safe: {@link #handle} may run concurrently for many connections.
 *
 * <p>Why this file is over 600 lines: it is the policy flow of one connection, read top to bottom
 * (parse, authorize, ask, connect, then tunnel or forward, then one event), and its steps share the
 * per-attempt record and the answers sent to the client. HTTP parsing lives in {@link Head}, {@link
 * LineReader}, {@link Authority} and {@link BodyFraming}; the next cut, if it grows, is plain-HTTP
 * forwarding ({@code forward}, {@code relayResponse}) into a class of its own.
 */
public final class EgressProxy {
  private static final Logger LOG = LoggerFactory.getLogger(EgressProxy.class);

  static final int MAX_REQUEST_LINE = 8 * 1024;
  static final int BUFFER_SIZE = 64 * 1024;
  static final int CONNECT_TIMEOUT_MS = 10_000;
  static final int MAX_CONNECT_ATTEMPTS = 3;
  static final long HALF_CLOSE_LINGER_MS = 30_000;
  static final long ABORT_JOIN_MS = 5_000;
  private static final int MAX_DRAIN_BYTES = 1 << 20;

  /**
   * How long a connection may take to send its request head (for a tunnel, also its TLS hello;
   * through an intercepted tunnel, each request head): a client that sends part of a head and stops
   * holds a host thread only this long.
   */
  static final Duration HEAD_DEADLINE = Duration.ofSeconds(30);

  /** How many of a sandbox's connections may be waiting for their first request head at once. */
  static final int MAX_PENDING_HEADS = 16;

  private static final Set<String> HOP_BY_HOP =
      Set.of(
          "connection",
          "keep-alive",
          "proxy-connection",
          "proxy-authorization",
          "proxy-authenticate",
          "te",
          "trailer",
          "upgrade");
  private static final Set<String> NEVER_STRIPPED =
      Set.of("host", "content-length", "transfer-encoding");

  private final NetworkPolicy policy;
  private final Resolver resolver;
  private final Consumer<NetworkEvent> audit;
  private final @Nullable ApprovalHandler approvals;
  private final String sandboxId;
  private final @Nullable Interception interception;
  private final @Nullable Interceptor interceptor;
  private final CredentialAudit credentialAudit;
  private final OperationCredentials operations;

  /** A person's answer about a host:port in ASK mode, held for the sandbox's life. */
  private record Remembered(boolean allowed, String decidedBy, String reason) {}

  /**
   * The rule of a connection refused by a remembered denial (an approval is approval-remembered).
   */
  static final String REMEMBERED_DENIAL = "approval-denied-remembered";

  /** Bounds the targets remembered: past it, each new target is asked about every time. */
  static final int MAX_REMEMBERED = 4096;

  private final ConcurrentHashMap<String, CompletableFuture<@Nullable Remembered>> decisions =
      new ConcurrentHashMap<>();

  /** The connections being served, so that the sandbox's end can close and audit each. */
  private final Set<Attempt> active = ConcurrentHashMap.newKeySet();

  private final AtomicInteger pendingHeads = new AtomicInteger();
  private volatile Duration headDeadline = HEAD_DEADLINE;
  private volatile boolean shutDown;

  /**
   * @param policy what may be reached
   * @param resolver resolves names (the proxy never lets the client or the OS re-resolve)
   * @param audit receives one event per attempt; exceptions it throws are logged and ignored
   * @param approvals asked in ASK mode; null denies what ASK mode would ask about
   * @param sandboxId for events and approval requests
   */
  public EgressProxy(
      NetworkPolicy policy,
      Resolver resolver,
      Consumer<NetworkEvent> audit,
      @Nullable ApprovalHandler approvals,
      String sandboxId) {
    this(policy, resolver, audit, approvals, sandboxId, null, CredentialAudit.NONE);
  }

  /**
   * A proxy that also terminates TLS for the hosts with credential rules ({@code interception}),
   * reporting each use of a credential to {@code credentialAudit}.
   */
  public EgressProxy(
      NetworkPolicy policy,
      Resolver resolver,
      Consumer<NetworkEvent> audit,
      @Nullable ApprovalHandler approvals,
      String sandboxId,
      @Nullable Interception interception,
      CredentialAudit credentialAudit) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.resolver = Objects.requireNonNull(resolver, "resolver");
    this.audit = Objects.requireNonNull(audit, "audit");
    this.approvals = approvals;
    this.sandboxId = Objects.requireNonNull(sandboxId, "sandboxId");
    this.interception = interception;
    this.credentialAudit = Objects.requireNonNull(credentialAudit, "credentialAudit");
    this.interceptor = interception == null ? null : new Interceptor(interception, credentialAudit);
    this.operations = new OperationCredentials(credentialAudit);
  }

  /** The credentials host operations (git) have the proxy add while they run. */
  public OperationCredentials operations() {
    return operations;
  }

  public NetworkPolicy policy() {
    return policy;
  }

  /**
   * Serves one client connection synchronously and returns when it is over. Closing {@code
   * toClient} is how the proxy signals the end of its side (for a tunnel: the destination closed
   * its side, a half-close); it is always closed before this method returns, and so is {@code
   * fromClient}. Never throws for I/O or protocol errors: they end the connection and are reported
   * in the event.
   */
  public void handle(InputStream fromClient, OutputStream toClient) {
    Attempt a = new Attempt();
    a.closeOnAbort(fromClient);
    a.clientOut = toClient;
    BufferedInputStream in = new BufferedInputStream(fromClient, 8192);
    active.add(a);
    try {
      if (shutDown) {
        a.deny("sandbox-destroyed", "the sandbox is going away: no new connections");
        return;
      }
      a.headDeadline = headDeadline;
      if (!awaitHead(a, toClient, "request head")) {
        return;
      }
      serve(a, in, toClient);
    } catch (IOException e) {
      a.note("connection failed: " + HttpSyntax.describe(e));
    } catch (RuntimeException e) {
      LOG.warn("egress proxy failure for sandbox {}", sandboxId, e);
      a.note("internal error: " + HttpSyntax.describe(e));
    } finally {
      a.headRead();
      String late = a.expired();
      if (late != null) {
        if (a.expiredBeforeHead) {
          a.deny("head-timeout", late + ": the connection was closed");
        } else {
          a.note(late + ": the connection was closed");
        }
      }
      IOUtils.closeQuietly(toClient);
      drainAvailable(in);
      IOUtils.closeQuietly(in);
      // Written before it leaves the set: shutdown() returns only once every record is out.
      emit(a);
      active.remove(a);
    }
  }

  /**
   * Takes one of the sandbox's places for connections waiting on a head (or a TLS hello) and arms
   * the deadline; false (503 sent, attempt denied) when all are taken. {@link Attempt#headRead()}
   * gives the place back.
   */
  private boolean awaitHead(Attempt a, OutputStream out, String what) throws IOException {
    if (pendingHeads.incrementAndGet() > MAX_PENDING_HEADS) {
      pendingHeads.decrementAndGet();
      String why =
          MAX_PENDING_HEADS
              + " connections of this sandbox are already waiting to send a request head or TLS"
              + " hello: this one ("
              + what
              + ") is refused (send each at once)";
      a.deny("pending-heads", why);
      respond(out, 503, "Service Unavailable", why, true);
      return false;
    }
    a.headRelease.set(pendingHeads::decrementAndGet);
    a.awaitHead(headDeadline, what);
    return true;
  }

  /**
   * Ends every open connection (the sandbox is going away): each is closed, noted with {@code
   * reason}, and audited with the bytes it moved so far. Waits at most {@code wait} for the
   * connections to finish on their own threads; those still running are audited from here. New
   * connections are refused from now on.
   */
  public void shutdown(String reason, Duration wait) {
    shutDown = true;
    for (Attempt a : active) {
      a.note("closed while open: " + reason);
      a.abort();
      IOUtils.closeQuietly(a.clientOut);
    }
    long deadline = System.nanoTime() + wait.toNanos();
    while (!active.isEmpty() && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    for (Attempt a : active) {
      emit(a); // a thread still stuck: the record goes out now, with what was moved so far
    }
  }

  /** For tests: a shorter wait for request heads. */
  void headDeadline(Duration d) {
    headDeadline = d;
  }

  /** The connections waiting for their first request head now. */
  int pendingHeads() {
    return pendingHeads.get();
  }

  // ---------------------------------------------------------------------------------------------
  // Request handling

  private void serve(Attempt a, BufferedInputStream in, OutputStream out) throws IOException {
    Head head;
    try {
      Head h = Head.read(new LineReader(in), MAX_REQUEST_LINE, "request");
      if (h == null || a.expired() != null) {
        if (a.expired() != null) {
          timedOut(a, out);
        } else {
          a.deny("bad-request", "the client closed the connection without sending a request");
        }
        return;
      }
      head = h;
    } catch (BadMessage | IOException e) {
      if (a.expired() != null) {
        timedOut(a, out);
        return;
      }
      if (e instanceof IOException io) {
        throw io;
      }
      badRequest(a, out, String.valueOf(e.getMessage()));
      return;
    }
    // The head is in: an approval question may take minutes. A tunnel's TLS hello gets a deadline
    // of its own once the tunnel is up.
    a.headRead();
    String[] parts = head.startLine.split(" ", -1);
    if (parts.length != 3) {
      badRequest(a, out, "the request line must be 'METHOD target HTTP/1.1'");
      return;
    }
    String method = parts[0];
    String target = parts[1];
    String version = parts[2];
    if (!HttpSyntax.isToken(method)) {
      badRequest(a, out, "the request method is not a valid token");
      return;
    }
    a.method = method;
    if (!version.equals("HTTP/1.1") && !version.equals("HTTP/1.0")) {
      badRequest(a, out, "unsupported protocol version (use HTTP/1.1)");
      return;
    }
    if (target.isEmpty() || !HttpSyntax.isVisibleAscii(target)) {
      badRequest(a, out, "the request target is empty or contains invalid characters");
      return;
    }
    if (method.equals("CONNECT")) {
      serveConnect(a, target, in, out);
    } else {
      serveHttp(a, head, method, target, version, in, out);
    }
  }

  private void serveConnect(Attempt a, String target, BufferedInputStream in, OutputStream out)
      throws IOException {
    Authority authority;
    try {
      authority = Authority.parse(target, -1);
    } catch (BadMessage e) {
      badRequest(a, out, "CONNECT needs host:port: " + e.getMessage());
      return;
    }
    a.host = authority.displayHost();
    a.port = authority.port;
    List<InetAddress> addresses = authorize(a, authority, "CONNECT " + target, out);
    if (addresses == null) {
      return;
    }
    // A name's tunnel must speak TLS to that same name (SNI); an address allowed by a range has
    // no name that could be fronted, so its tunnel stays opaque.
    String sniName = IpAddresses.parseLiteral(authority.host).isPresent() ? null : a.host;
    OperationCredentials.Grant grant = sniName == null ? null : operations.https(a.host, a.port);
    Interceptor opIcpt = grant == null ? null : grant.interceptor();
    if (opIcpt != null && sniName != null) {
      // A host operation (git) is running against this remote: the proxy adds its credential.
      out.write(
          "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      a.note("TLS terminated for a host operation's credential");
      opIcpt.serve(a, in, out, a.host, () -> open(a, addresses, authority));
      return;
    }
    Interceptor icpt = interceptor;
    Interception i = interception;
    if (icpt != null && i != null && sniName != null && i.intercepts(a.host)) {
      // The interceptor connects (or reuses a verified connection) once the client's TLS is up;
      // a server it cannot reach is answered inside that TLS, with a 502.
      if (!awaitHead(a, out, "TLS hello and first request head")) {
        return;
      }
      out.write(
          "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      a.note("TLS terminated for credential rules");
      icpt.serve(a, in, out, a.host, () -> open(a, addresses, authority));
      return;
    }
    Socket upstream = connect(a, addresses, authority, out);
    if (upstream == null) {
      return;
    }
    try (upstream) {
      if (sniName != null && !awaitHead(a, out, "TLS hello")) {
        return;
      }
      out.write(
          "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      tunnel(a, in, out, upstream, sniName);
    }
  }

  /** Closes what the proxy keeps between connections (verified upstream TLS connections). */
  public void close() {
    operations.closeAll();
    Interceptor icpt = interceptor;
    if (icpt != null) {
      icpt.close();
    }
  }

  private void serveHttp(
      Attempt a,
      Head head,
      String method,
      String target,
      String version,
      BufferedInputStream in,
      OutputStream out)
      throws IOException {
    if (target.startsWith("/") || target.equals("*")) {
      badRequest(
          a,
          out,
          "this is a proxy: send requests in absolute form (GET http://host/path) or use CONNECT"
              + " host:port for HTTPS; set HTTP_PROXY/HTTPS_PROXY to this proxy instead of"
              + " requesting it directly");
      return;
    }
    String lower = target.toLowerCase(Locale.ROOT);
    if (lower.startsWith("https://")) {
      badRequest(a, out, "https:// targets must use CONNECT host:443 (a TLS tunnel)");
      return;
    }
    if (!lower.startsWith("http://")) {
      badRequest(a, out, "only http:// absolute-form targets and CONNECT are supported");
      return;
    }
    String rest = target.substring("http://".length());
    int end = rest.length();
    for (int i = 0; i < rest.length(); i++) {
      char c = rest.charAt(i);
      if (c == '/' || c == '?' || c == '#') {
        end = i;
        break;
      }
    }
    String authorityText = rest.substring(0, end);
    String path = rest.substring(end);
    if (authorityText.indexOf('@') >= 0) {
      badRequest(a, out, "user information in the target URI is not allowed");
      return;
    }
    if (path.indexOf('#') >= 0) {
      badRequest(a, out, "the target URI must not contain a fragment");
      return;
    }
    if (path.isEmpty()) {
      path = "/";
    } else if (path.startsWith("?")) {
      path = "/" + path;
    }
    Authority authority;
    try {
      authority = Authority.parse(authorityText, 80);
    } catch (BadMessage e) {
      badRequest(a, out, "invalid target authority: " + e.getMessage());
      return;
    }
    a.host = authority.displayHost();
    a.port = authority.port;

    // Framing and Host checks first: a request we could not forward faithfully is a 400.
    BodyFraming framing;
    try {
      framing = BodyFraming.ofRequest(head, version);
    } catch (BadMessage e) {
      badRequest(a, out, e.getMessage());
      return;
    }
    List<String> hosts = head.all("host");
    if (hosts.size() > 1) {
      badRequest(a, out, "more than one Host header");
      return;
    }
    if (hosts.size() == 1 && !sameAuthority(hosts.get(0), authority)) {
      deny(
          a,
          out,
          "host-mismatch",
          "the Host header '"
              + hosts.get(0)
              + "' differs from the request target "
              + authority.displayTarget());
      return;
    }
    List<InetAddress> addresses =
        authorize(a, authority, method + " " + Bounded.text(target, 512), out);
    if (addresses == null) {
      return;
    }
    Socket upstream = connect(a, addresses, authority, out);
    if (upstream == null) {
      return;
    }
    try (upstream) {
      forward(a, head, method, path, version, authority, framing, in, out, upstream);
    }
  }

  /** The validated addresses to connect to, or null when denied (the answer is already sent). */
  private @Nullable List<InetAddress> authorize(
      Attempt a, Authority authority, String detail, OutputStream out) throws IOException {
    String target = authority.displayTarget();
    Optional<InetAddress> literal = IpAddresses.parseLiteral(authority.host);
    if (literal.isPresent()) {
      InetAddress address = literal.get();
      a.resolved = IpAddresses.format(address);
      Optional<NetworkPolicy.Match> m = policy.matchAddress(address);
      if (m.isEmpty()) {
        deny(
            a,
            out,
            "ip-literal",
            target
                + " is an IP address: only names on the allowlist may be reached"
                + " (no allowAddress range covers it)");
        return null;
      }
      a.allow(m.get().rule(), "allowed by address range " + m.get().rule());
      return List.of(address);
    }
    if (IpAddresses.looksLikeIpLiteral(authority.host)) {
      deny(
          a,
          out,
          "ip-literal",
          target + " looks like an IP address in a non-canonical form; use a host name");
      return null;
    }
    Optional<String> normalized = NetworkPolicy.normalizeHost(authority.host);
    if (normalized.isEmpty()) {
      badRequest(a, out, "'" + authority.host + "' is not a valid host name");
      return null;
    }
    String name = normalized.get();
    a.host = name;
    target = name + ":" + authority.port;
    Optional<NetworkPolicy.Match> match = policy.match(name, authority.port);
    if (match.isPresent()) {
      a.allow(match.get().rule(), "allowed by rule " + match.get().rule());
    } else if (policy.onUnknownHost() == NetworkPolicy.Mode.ASK) {
      if (!approved(a, target, detail, out)) {
        return null;
      }
    } else {
      Optional<String> why = policy.wildcardRefusal(name, authority.port);
      deny(
          a,
          out,
          "not-allowlisted",
          target
              + (why.isPresent() ? " is not allowed: " + why.get() : " is not on the allowlist"));
      return null;
    }
    List<InetAddress> resolved;
    try {
      resolved = resolver.resolve(name);
    } catch (IOException e) {
      fail(a, out, "cannot resolve " + name + ": " + HttpSyntax.describe(e));
      return null;
    }
    if (resolved.isEmpty()) {
      fail(a, out, "cannot resolve " + name + ": no addresses");
      return null;
    }
    for (InetAddress address : resolved) {
      if (!AddressRules.isPublic(address) && policy.matchAddress(address).isEmpty()) {
        String text = IpAddresses.format(address);
        a.resolved = text;
        deny(
            a,
            out,
            "non-public-address",
            name
                + " resolves to "
                + text
                + ", "
                + AddressRules.classify(address).description()
                + ": refused (allowAddress(\""
                + text
                + "\") in the network policy would allow it)");
        return null;
      }
    }
    return List.copyOf(resolved);
  }

  /**
   * Whether a person approves {@code target}: the answer remembered for this sandbox when there is
   * one (and the policy remembers), else the approval handler's. Connections to a target that is
   * being asked about wait for that one question instead of asking again.
   */
  private boolean approved(Attempt a, String target, String detail, OutputStream out)
      throws IOException {
    if (!policy.remembersDecisions()) {
      return askApproval(a, target, detail, out, new CompletableFuture<>());
    }
    CompletableFuture<@Nullable Remembered> mine = new CompletableFuture<>();
    CompletableFuture<@Nullable Remembered> pending =
        decisions.size() >= MAX_REMEMBERED ? null : decisions.putIfAbsent(target, mine);
    if (pending == null) {
      try {
        return askApproval(a, target, detail, out, mine);
      } finally {
        mine.complete(null);
        if (mine.getNow(null) == null) {
          decisions.remove(target, mine); // nobody decided: the next connection asks again
        }
      }
    }
    Remembered r;
    try {
      r = pending.get(policy.approvalTimeout().toMillis() + ABORT_JOIN_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      r = null;
    } catch (ExecutionException | TimeoutException e) {
      r = null;
    }
    if (r == null) {
      deny(
          a,
          out,
          "approval-timeout",
          target + " is not on the allowlist and the pending question about it got no decision");
      return false;
    }
    String by = r.decidedBy() + ": " + r.reason() + " (remembered for this sandbox)";
    if (r.allowed()) {
      a.approveRemembered("approved by " + by);
      return true;
    }
    deny(a, out, REMEMBERED_DENIAL, target + " is not on the allowlist and was denied by " + by);
    return false;
  }

  /**
   * Asks the approval handler; true when approved, false when denied (answer sent). A person's
   * answer (not a timeout or a failure) completes {@code decided}.
   */
  private boolean askApproval(
      Attempt a,
      String target,
      String detail,
      OutputStream out,
      CompletableFuture<@Nullable Remembered> decided)
      throws IOException {
    ApprovalHandler handler = approvals;
    if (handler == null) {
      deny(
          a,
          out,
          "approval-denied",
          target + " is not on the allowlist and no approval handler is configured");
      return false;
    }
    ApprovalRequest request =
        new ApprovalRequest(sandboxId, "network", target, Bounded.text(detail, 600), Instant.now());
    Duration timeout = policy.approvalTimeout();
    CompletableFuture<@Nullable ApprovalDecision> result = new CompletableFuture<>();
    AtomicReference<@Nullable CompletionStage<ApprovalDecision>> stage = new AtomicReference<>();
    Thread asker =
        new Thread(
            () -> {
              try {
                CompletionStage<ApprovalDecision> s = handler.decide(request);
                if (s == null) {
                  result.complete(null);
                  return;
                }
                stage.set(s);
                s.whenComplete(
                    (d, e) -> {
                      if (e != null) {
                        result.completeExceptionally(e);
                      } else {
                        result.complete(d);
                      }
                    });
              } catch (RuntimeException | Error e) {
                result.completeExceptionally(e);
              }
            },
            "agentnest-egress-approval-" + sandboxId);
    asker.setDaemon(true);
    asker.start();
    ApprovalDecision decision;
    try {
      decision = result.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      cancel(stage.get());
      asker.interrupt();
      deny(
          a,
          out,
          "approval-timeout",
          target + " is not on the allowlist and no approval arrived within " + timeout);
      return false;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      deny(
          a,
          out,
          "approval-denied",
          target
              + " is not on the allowlist and the approval handler failed: "
              + HttpSyntax.describe(cause));
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cancel(stage.get());
      deny(a, out, "approval-denied", target + ": interrupted while waiting for approval");
      return false;
    }
    if (decision != null) {
      decided.complete(
          new Remembered(
              decision.allowed(),
              HttpSyntax.printable(Bounded.text(decision.decidedBy(), 200)),
              HttpSyntax.printable(Bounded.text(decision.reason(), 400))));
    }
    if (decision == null || !decision.allowed()) {
      String why =
          decision == null
              ? "the approval handler returned no decision"
              : "denied by " + decision.decidedBy() + ": " + decision.reason();
      deny(a, out, "approval-denied", target + " is not on the allowlist and was " + why);
      return false;
    }
    a.approve("approved by " + decision.decidedBy() + ": " + decision.reason());
    return true;
  }

  private static void cancel(@Nullable CompletionStage<ApprovalDecision> stage) {
    if (stage != null) {
      try {
        stage.toCompletableFuture().cancel(true);
      } catch (UnsupportedOperationException e) {
        // a stage that cannot be cancelled; its late answer is ignored
      }
    }
  }

  /** Connects to the first reachable validated address; null when none (502 sent). */
  private @Nullable Socket connect(
      Attempt a, List<InetAddress> addresses, Authority authority, OutputStream out)
      throws IOException {
    try {
      return open(a, addresses, authority);
    } catch (IOException e) {
      fail(a, out, String.valueOf(e.getMessage()));
      return null;
    }
  }

  /**
   * Connects to the first reachable validated address; throws an IOException whose message names
   * the target and the failure when none answers.
   */
  private Socket open(Attempt a, List<InetAddress> addresses, Authority authority)
      throws IOException {
    IOException last = null;
    InetAddress lastAddress = addresses.get(0);
    for (int i = 0; i < addresses.size() && i < MAX_CONNECT_ATTEMPTS; i++) {
      InetAddress address = addresses.get(i);
      Socket s = new Socket();
      try {
        s.setTcpNoDelay(true);
        // An InetSocketAddress from an InetAddress: connects to exactly the validated address.
        s.connect(new InetSocketAddress(address, authority.port), CONNECT_TIMEOUT_MS);
        a.resolved = IpAddresses.format(address);
        a.closeOnAbort(s);
        return s;
      } catch (IOException e) {
        IOUtils.closeQuietly(s);
        last = e;
        lastAddress = address;
      }
    }
    a.resolved = IpAddresses.format(lastAddress);
    throw new IOException(
        "cannot connect to "
            + a.host
            + ":"
            + a.port
            + " ("
            + IpAddresses.format(lastAddress)
            + "): "
            + (last == null ? "no address" : HttpSyntax.describe(last)));
  }

  /** Opens a new connection to the target of a CONNECT that was already authorized. */
  interface Connector {
    Socket open() throws IOException;
  }

  // ---------------------------------------------------------------------------------------------
  // CONNECT tunnel

  private void tunnel(
      Attempt a, InputStream in, OutputStream out, Socket upstream, @Nullable String sniName)
      throws IOException {
    InputStream upIn = upstream.getInputStream();
    OutputStream upOut = upstream.getOutputStream();
    AtomicLong up = a.up;
    a.closeOnAbort(upstream);
    AtomicReference<SniCheck.@Nullable Verdict> refused = new AtomicReference<>();
    Thread uploader =
        new Thread(
            () -> {
              byte[] buf = new byte[BUFFER_SIZE];
              try {
                if (sniName != null) {
                  SniCheck.Verdict v = SniCheck.inspect(in, sniName);
                  a.headRead();
                  if (!v.passed()) {
                    // Set before the close: the downstream loop ends on it and answers.
                    refused.set(v);
                    IOUtils.closeQuietly(upstream);
                    return;
                  }
                  upOut.write(v.consumed());
                  up.addAndGet(v.consumed().length);
                }
                int n;
                while ((n = in.read(buf)) >= 0) {
                  upOut.write(buf, 0, n);
                  up.addAndGet(n);
                }
                upstream.shutdownOutput();
              } catch (IOException e) {
                abort(upstream, in);
              }
            },
            "agentnest-egress-up-" + sandboxId);
    uploader.setDaemon(true);
    uploader.start();

    byte[] buf = new byte[BUFFER_SIZE];
    boolean failed = false;
    try {
      int n;
      while ((n = upIn.read(buf)) >= 0) {
        out.write(buf, 0, n);
        out.flush();
        a.down.addAndGet(n);
      }
    } catch (IOException e) {
      failed = true;
      a.note("tunnel ended with an error: " + HttpSyntax.describe(e));
    }
    SniCheck.Verdict refusal = refused.get();
    if (refusal != null) {
      answerRefusal(out, refusal);
    }
    IOUtils.closeQuietly(out); // half-close toward the client: the destination is done
    if (failed) {
      abort(upstream, in);
    }
    joinQuietly(uploader, HALF_CLOSE_LINGER_MS);
    if (uploader.isAlive()) {
      abort(upstream, in);
      joinQuietly(uploader, ABORT_JOIN_MS);
    }
    refusal = refused.get();
    SniCheck.Refusal why = refusal == null ? null : refusal.refusal();
    if (refusal != null && why != null) {
      a.deny(why.code, refusal.reason());
    }
  }

  /** Tells a refused tunnel's client why: a TLS alert to a TLS client, else a 403 as text. */
  static void answerRefusal(OutputStream out, SniCheck.Verdict v) {
    SniCheck.Refusal r = v.refusal();
    if (r == null) {
      return;
    }
    try {
      if (v.tls()) {
        out.write(SniCheck.alert(r));
        out.flush();
      } else {
        respond(out, 403, "Forbidden", v.reason(), true);
      }
    } catch (IOException e) {
      // the client is gone; the refusal is in the event all the same
    }
  }

  private static void abort(Socket upstream, InputStream in) {
    IOUtils.closeQuietly(upstream);
    IOUtils.closeQuietly(in);
  }

  // ---------------------------------------------------------------------------------------------
  // Plain HTTP forwarding

  private void forward(
      Attempt a,
      Head head,
      String method,
      String path,
      String version,
      Authority authority,
      BodyFraming framing,
      BufferedInputStream in,
      OutputStream out,
      Socket upstream)
      throws IOException {
    StringBuilder sb = new StringBuilder(512);
    sb.append(method).append(' ').append(path).append(' ').append(version).append("\r\n");
    sb.append("Host: ").append(authority.hostHeader(a.host)).append("\r\n");
    Set<String> strip = strippedHeaders(head);
    reportPlaceholders(head, method, path, a.host);
    // A host operation (git over http://) running against this remote: its credential, added here.
    OperationCredentials.Grant grant = operations.http(a.host, authority.port);
    String injected = grant == null ? "" : grant.header().name().toLowerCase(Locale.ROOT);
    for (HeaderField h : head.headers) {
      if (!h.lowerName.equals("host")
          && !strip.contains(h.lowerName)
          && !h.lowerName.equals(injected)) {
        sb.append(h.name).append(": ").append(h.value).append("\r\n");
      }
    }
    if (grant != null) {
      sb.append(grant.header().name()).append(": ").append(grant.header().value());
      sb.append("\r\n");
      credentialAudit.used(
          grant.header().secretName(),
          CredentialAudit.Kind.INJECTED,
          a.host,
          method,
          Bounded.text(path, 512),
          0);
    }
    // A server that reflects the request must not hand the credential to the sandbox.
    MaskingOutputStream masked =
        grant == null ? null : new MaskingOutputStream(out, grant.secrets());
    sb.append("Connection: close\r\n\r\n");
    byte[] requestHead = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    OutputStream upOut = upstream.getOutputStream();
    BufferedInputStream upIn = new BufferedInputStream(upstream.getInputStream(), 8192);
    AtomicLong up = a.up;
    a.closeOnAbort(upstream);
    upOut.write(requestHead);
    upOut.flush();
    up.addAndGet(requestHead.length);

    Thread uploader = null;
    if (framing.hasBody()) {
      uploader =
          new Thread(
              () -> {
                try {
                  framing.copy(in, upOut, up, false);
                  upOut.flush();
                } catch (ClientBodyException e) {
                  // The client broke off its body: the server would wait forever.
                  IOUtils.closeQuietly(upstream);
                } catch (IOException | BadMessage e) {
                  // The server stopped reading (e.g. answered early): the response tells why.
                  if (e instanceof BadMessage) {
                    IOUtils.closeQuietly(upstream);
                  }
                }
              },
              "agentnest-egress-body-" + sandboxId);
      uploader.setDaemon(true);
      uploader.start();
    }
    try {
      relayResponse(a, method, upIn, masked == null ? out : masked, a.down);
      if (masked != null) {
        masked.finish();
      }
    } finally {
      if (uploader != null) {
        if (uploader.isAlive()) {
          abort(upstream, in);
        }
        joinQuietly(uploader, ABORT_JOIN_MS);
      }
    }
  }

  /** Placeholders are never swapped in plain HTTP: one seen there is an attempted leak. */
  private void reportPlaceholders(Head head, String method, String path, String host) {
    Interception i = interception;
    if (i == null) {
      return;
    }
    for (NetworkPolicy.Placeholder p : i.placeholders()) {
      String token = i.valueOf(p);
      boolean seen = path.contains(token);
      for (HeaderField h : head.headers) {
        seen |= h.value.contains(token);
      }
      if (seen) {
        credentialAudit.leakAttempt(
            p.secretName(), p.host(), host, method, Bounded.text(path, 512));
      }
    }
  }

  private void relayResponse(
      Attempt a, String method, BufferedInputStream upIn, OutputStream out, AtomicLong down)
      throws IOException {
    LineReader reader = new LineReader(upIn);
    boolean sentAnything = false;
    try {
      while (true) {
        long before = reader.bytes;
        Head response = Head.read(reader, MAX_REQUEST_LINE, "response");
        down.addAndGet(reader.bytes - before);
        if (response == null) {
          throw new BadMessage("the server closed the connection without a response");
        }
        int status = statusOf(response.startLine);
        if (status == 101) {
          throw new BadMessage(
              "the server switched protocols, which plain HTTP proxying cannot do");
        }
        boolean interim = status >= 100 && status < 200;
        StringBuilder sb = new StringBuilder(512);
        sb.append(response.startLine).append("\r\n");
        Set<String> strip = strippedHeaders(response);
        for (HeaderField h : response.headers) {
          if (!strip.contains(h.lowerName)) {
            sb.append(h.name).append(": ").append(h.value).append("\r\n");
          }
        }
        if (!interim) {
          sb.append("Connection: close\r\n");
        }
        sb.append("\r\n");
        out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        sentAnything = true;
        if (interim) {
          continue;
        }
        BodyFraming framing = BodyFraming.ofResponse(response, method, status);
        framing.copy(upIn, out, down, true);
        out.flush();
        return;
      }
    } catch (BadMessage e) {
      if (sentAnything) {
        a.note("bad response from " + a.host + ":" + a.port + ": " + e.getMessage());
      } else {
        fail(a, out, "bad response from " + a.host + ":" + a.port + ": " + e.getMessage());
      }
    } catch (IOException e) {
      if (sentAnything) {
        a.note("response from " + a.host + ":" + a.port + " broke off: " + HttpSyntax.describe(e));
      } else {
        fail(a, out, "no response from " + a.host + ":" + a.port + ": " + HttpSyntax.describe(e));
      }
    }
  }

  static int statusOf(String statusLine) throws BadMessage {
    if (statusLine.length() < 12
        || !(statusLine.startsWith("HTTP/1.1 ") || statusLine.startsWith("HTTP/1.0 "))
        || !(statusLine.length() == 12 || statusLine.charAt(12) == ' ')) {
      throw new BadMessage("malformed status line");
    }
    String code = statusLine.substring(9, 12);
    if (!code.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new BadMessage("malformed status code");
    }
    return Integer.parseInt(code);
  }

  /** Hop-by-hop headers and those the Connection header lists (never Host or body framing). */
  static Set<String> strippedHeaders(Head head) {
    Set<String> strip = new HashSet<>(HOP_BY_HOP);
    for (String value : head.all("connection")) {
      for (String token : value.split(",")) {
        String t = token.trim().toLowerCase(Locale.ROOT);
        if (!t.isEmpty() && !NEVER_STRIPPED.contains(t)) {
          strip.add(t);
        }
      }
    }
    return strip;
  }

  private static boolean sameAuthority(String hostHeader, Authority target) {
    Authority h;
    try {
      h = Authority.parse(hostHeader.trim(), 80);
    } catch (BadMessage e) {
      return false;
    }
    if (h.port != target.port) {
      return false;
    }
    Optional<InetAddress> a = IpAddresses.parseLiteral(h.host);
    Optional<InetAddress> b = IpAddresses.parseLiteral(target.host);
    if (a.isPresent() || b.isPresent()) {
      return a.isPresent() && b.isPresent() && a.get().equals(b.get());
    }
    Optional<String> x = NetworkPolicy.normalizeHost(h.host);
    return x.isPresent() && x.equals(NetworkPolicy.normalizeHost(target.host));
  }

  // ---------------------------------------------------------------------------------------------
  // Answers and events

  private void deny(Attempt a, OutputStream out, String code, String reason) throws IOException {
    a.deny(code, reason);
    respond(out, 403, "Forbidden", reason, true);
  }

  /** Answers a connection whose head did not arrive in time (best effort: it may be gone). */
  private void timedOut(Attempt a, OutputStream out) {
    try {
      respond(out, 408, "Request Timeout", String.valueOf(a.expired()), false);
    } catch (IOException e) {
      // the client is gone; the record says why
    }
  }

  private void badRequest(Attempt a, OutputStream out, String reason) throws IOException {
    a.deny("bad-request", "bad request: " + HttpSyntax.printable(reason));
    respond(out, 400, "Bad Request", "bad request: " + reason, false);
  }

  private void fail(Attempt a, OutputStream out, String reason) throws IOException {
    a.note(reason);
    respond(out, 502, "Bad Gateway", reason, false);
  }

  static void respond(OutputStream out, int status, String phrase, String reason, boolean denied)
      throws IOException {
    String text = HttpSyntax.printable(reason);
    byte[] body = ("agentnest egress: " + text + "\n").getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(256);
    sb.append("HTTP/1.1 ").append(status).append(' ').append(phrase).append("\r\n");
    sb.append("Content-Type: text/plain; charset=utf-8\r\n");
    sb.append("Content-Length: ").append(body.length).append("\r\n");
    sb.append("Connection: close\r\n");
    if (denied) {
      sb.append("X-AgentNest-Denied: ").append(text).append("\r\n");
    }
    sb.append("\r\n");
    out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
    out.write(body);
    out.flush();
  }

  private void emit(Attempt a) {
    if (!a.emitted.compareAndSet(false, true)) {
      return;
    }
    NetworkEvent event =
        new NetworkEvent(
            sandboxId,
            a.time,
            a.method,
            a.host,
            a.port,
            a.resolved,
            a.decision,
            a.rule,
            a.reason,
            a.up.get(),
            a.down.get(),
            Duration.ofNanos(System.nanoTime() - a.startNanos));
    try {
      audit.accept(event);
    } catch (RuntimeException e) {
      LOG.warn("network audit sink failed for sandbox {}", sandboxId, e);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Small helpers

  private static void joinQuietly(Thread t, long millis) {
    try {
      t.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Reads and drops what the client already sent, without blocking, so closing sends no RST. */
  private static void drainAvailable(InputStream in) {
    try {
      byte[] buf = new byte[8192];
      int drained = 0;
      int n;
      while (drained < MAX_DRAIN_BYTES
          && in.available() > 0
          && (n = in.read(buf, 0, Math.min(buf.length, in.available()))) > 0) {
        drained += n;
      }
    } catch (IOException e) {
      // closing anyway
    }
  }
}
