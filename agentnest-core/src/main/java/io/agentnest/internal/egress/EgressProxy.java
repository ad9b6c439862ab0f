package io.agentnest.internal.egress;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkEvent.Decision;
import io.agentnest.NetworkPolicy;
import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
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
 */
public final class EgressProxy {
  private static final Logger LOG = LoggerFactory.getLogger(EgressProxy.class);

  static final int MAX_REQUEST_LINE = 8 * 1024;
  static final int MAX_HEADER_BYTES = 64 * 1024;
  static final int MAX_HEADERS = 100;
  static final int MAX_CHUNK_LINE = 4 * 1024;
  static final int BUFFER_SIZE = 64 * 1024;
  static final int CONNECT_TIMEOUT_MS = 10_000;
  static final int MAX_CONNECT_ATTEMPTS = 3;
  static final long HALF_CLOSE_LINGER_MS = 30_000;
  static final long ABORT_JOIN_MS = 5_000;
  private static final int MAX_DRAIN_BYTES = 1 << 20;
  private static final int MAX_REASON_CHARS = 300;

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
    this.policy = Objects.requireNonNull(policy, "policy");
    this.resolver = Objects.requireNonNull(resolver, "resolver");
    this.audit = Objects.requireNonNull(audit, "audit");
    this.approvals = approvals;
    this.sandboxId = Objects.requireNonNull(sandboxId, "sandboxId");
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
    BufferedInputStream in = new BufferedInputStream(fromClient, 8192);
    try {
      serve(a, in, toClient);
    } catch (IOException e) {
      a.note("connection failed: " + describe(e));
    } catch (RuntimeException e) {
      LOG.warn("egress proxy failure for sandbox {}", sandboxId, e);
      a.note("internal error: " + describe(e));
    } finally {
      closeQuietly(toClient);
      drainAvailable(in);
      closeQuietly(in);
      emit(a);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Request handling

  private void serve(Attempt a, BufferedInputStream in, OutputStream out) throws IOException {
    Head head;
    try {
      Head h = Head.read(new LineReader(in), MAX_REQUEST_LINE, "request");
      if (h == null) {
        a.deny("bad-request", "the client closed the connection without sending a request");
        return;
      }
      head = h;
    } catch (BadMessage e) {
      badRequest(a, out, e.getMessage());
      return;
    }
    String[] parts = head.startLine.split(" ", -1);
    if (parts.length != 3) {
      badRequest(a, out, "the request line must be 'METHOD target HTTP/1.1'");
      return;
    }
    String method = parts[0];
    String target = parts[1];
    String version = parts[2];
    if (!isToken(method)) {
      badRequest(a, out, "the request method is not a valid token");
      return;
    }
    a.method = method;
    if (!version.equals("HTTP/1.1") && !version.equals("HTTP/1.0")) {
      badRequest(a, out, "unsupported protocol version (use HTTP/1.1)");
      return;
    }
    if (target.isEmpty() || !isVisibleAscii(target)) {
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
    Socket upstream = connect(a, addresses, authority, out);
    if (upstream == null) {
      return;
    }
    // A name's tunnel must speak TLS to that same name (SNI); an address allowed by a range has
    // no name that could be fronted, so its tunnel stays opaque.
    String sniName = AddressRules.parseLiteral(authority.host).isPresent() ? null : a.host;
    try (upstream) {
      out.write(
          "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      tunnel(a, in, out, upstream, sniName);
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
      framing = BodyFraming.ofRequest(head);
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
    List<InetAddress> addresses = authorize(a, authority, method + " " + bounded(target, 512), out);
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
    Optional<InetAddress> literal = AddressRules.parseLiteral(authority.host);
    if (literal.isPresent()) {
      InetAddress address = literal.get();
      a.resolved = AddressRules.format(address);
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
    if (AddressRules.looksLikeIpLiteral(authority.host)) {
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
      if (!askApproval(a, target, detail, out)) {
        return null;
      }
    } else {
      deny(a, out, "not-allowlisted", target + " is not on the allowlist");
      return null;
    }
    List<InetAddress> resolved;
    try {
      resolved = resolver.resolve(name);
    } catch (IOException e) {
      fail(a, out, "cannot resolve " + name + ": " + describe(e));
      return null;
    }
    if (resolved.isEmpty()) {
      fail(a, out, "cannot resolve " + name + ": no addresses");
      return null;
    }
    for (InetAddress address : resolved) {
      if (!AddressRules.isPublic(address) && policy.matchAddress(address).isEmpty()) {
        String text = AddressRules.format(address);
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

  /** Asks the approval handler; true when approved, false when denied (answer sent). */
  private boolean askApproval(Attempt a, String target, String detail, OutputStream out)
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
        new ApprovalRequest(sandboxId, "network", target, bounded(detail, 600), Instant.now());
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
          target + " is not on the allowlist and the approval handler failed: " + describe(cause));
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cancel(stage.get());
      deny(a, out, "approval-denied", target + ": interrupted while waiting for approval");
      return false;
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
    IOException last = null;
    InetAddress lastAddress = addresses.get(0);
    for (int i = 0; i < addresses.size() && i < MAX_CONNECT_ATTEMPTS; i++) {
      InetAddress address = addresses.get(i);
      Socket s = new Socket();
      try {
        s.setTcpNoDelay(true);
        // An InetSocketAddress from an InetAddress: connects to exactly the validated address.
        s.connect(new InetSocketAddress(address, authority.port), CONNECT_TIMEOUT_MS);
        a.resolved = AddressRules.format(address);
        return s;
      } catch (IOException e) {
        closeQuietly(s);
        last = e;
        lastAddress = address;
      }
    }
    a.resolved = AddressRules.format(lastAddress);
    fail(
        a,
        out,
        "cannot connect to "
            + a.host
            + ":"
            + a.port
            + " ("
            + AddressRules.format(lastAddress)
            + "): "
            + (last == null ? "no address" : describe(last)));
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // CONNECT tunnel

  private void tunnel(
      Attempt a, InputStream in, OutputStream out, Socket upstream, @Nullable String sniName)
      throws IOException {
    InputStream upIn = upstream.getInputStream();
    OutputStream upOut = upstream.getOutputStream();
    AtomicLong up = new AtomicLong();
    AtomicReference<SniCheck.@Nullable Verdict> refused = new AtomicReference<>();
    Thread uploader =
        new Thread(
            () -> {
              byte[] buf = new byte[BUFFER_SIZE];
              try {
                if (sniName != null) {
                  SniCheck.Verdict v = SniCheck.inspect(in, sniName);
                  if (!v.passed()) {
                    // Set before the close: the downstream loop ends on it and answers.
                    refused.set(v);
                    closeQuietly(upstream);
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
    long down = 0;
    boolean failed = false;
    try {
      int n;
      while ((n = upIn.read(buf)) >= 0) {
        out.write(buf, 0, n);
        out.flush();
        down += n;
      }
    } catch (IOException e) {
      failed = true;
      a.note("tunnel ended with an error: " + describe(e));
    }
    a.bytesDown = down;
    SniCheck.Verdict refusal = refused.get();
    if (refusal != null) {
      answerRefusal(out, refusal);
    }
    closeQuietly(out); // half-close toward the client: the destination is done
    if (failed) {
      abort(upstream, in);
    }
    joinQuietly(uploader, HALF_CLOSE_LINGER_MS);
    if (uploader.isAlive()) {
      abort(upstream, in);
      joinQuietly(uploader, ABORT_JOIN_MS);
    }
    a.bytesUp = up.get();
    refusal = refused.get();
    SniCheck.Refusal why = refusal == null ? null : refusal.refusal();
    if (refusal != null && why != null) {
      a.deny(why.code, refusal.reason());
    }
  }

  /** Tells a refused tunnel's client why: a TLS alert to a TLS client, else a 403 as text. */
  private static void answerRefusal(OutputStream out, SniCheck.Verdict v) {
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
    closeQuietly(upstream);
    closeQuietly(in);
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
    for (Header h : head.headers) {
      if (!h.lowerName.equals("host") && !strip.contains(h.lowerName)) {
        sb.append(h.name).append(": ").append(h.value).append("\r\n");
      }
    }
    sb.append("Connection: close\r\n\r\n");
    byte[] requestHead = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    OutputStream upOut = upstream.getOutputStream();
    BufferedInputStream upIn = new BufferedInputStream(upstream.getInputStream(), 8192);
    AtomicLong up = new AtomicLong();
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
                  closeQuietly(upstream);
                } catch (IOException | BadMessage e) {
                  // The server stopped reading (e.g. answered early): the response tells why.
                  if (e instanceof BadMessage) {
                    closeQuietly(upstream);
                  }
                }
              },
              "agentnest-egress-body-" + sandboxId);
      uploader.setDaemon(true);
      uploader.start();
    }
    AtomicLong down = new AtomicLong();
    try {
      relayResponse(a, method, upIn, out, down);
    } finally {
      a.bytesDown = down.get();
      if (uploader != null) {
        if (uploader.isAlive()) {
          abort(upstream, in);
        }
        joinQuietly(uploader, ABORT_JOIN_MS);
      }
      a.bytesUp = up.get();
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
        for (Header h : response.headers) {
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
        a.note("response from " + a.host + ":" + a.port + " broke off: " + describe(e));
      } else {
        fail(a, out, "no response from " + a.host + ":" + a.port + ": " + describe(e));
      }
    }
  }

  private static int statusOf(String statusLine) throws BadMessage {
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
  private static Set<String> strippedHeaders(Head head) {
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
    Optional<InetAddress> a = AddressRules.parseLiteral(h.host);
    Optional<InetAddress> b = AddressRules.parseLiteral(target.host);
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

  private void badRequest(Attempt a, OutputStream out, String reason) throws IOException {
    a.deny("bad-request", "bad request: " + printable(reason));
    respond(out, 400, "Bad Request", "bad request: " + reason, false);
  }

  private void fail(Attempt a, OutputStream out, String reason) throws IOException {
    a.note(reason);
    respond(out, 502, "Bad Gateway", reason, false);
  }

  private static void respond(
      OutputStream out, int status, String phrase, String reason, boolean denied)
      throws IOException {
    String text = printable(reason);
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
            a.bytesUp,
            a.bytesDown,
            Duration.ofNanos(System.nanoTime() - a.startNanos));
    try {
      audit.accept(event);
    } catch (RuntimeException e) {
      LOG.warn("network audit sink failed for sandbox {}", sandboxId, e);
    }
  }

  /** The mutable record of one attempt, turned into a {@link NetworkEvent} at the end. */
  private static final class Attempt {
    static final String NO_REQUEST = "no request";
    final Instant time = Instant.now();
    final long startNanos = System.nanoTime();
    String method = "-";
    String host = "";
    int port;
    @Nullable String resolved;
    Decision decision = Decision.DENIED;
    @Nullable String rule;
    String reason = NO_REQUEST;
    long bytesUp;
    long bytesDown;

    void deny(String code, String why) {
      decision = Decision.DENIED;
      rule = code;
      reason = printable(why);
    }

    void allow(String matched, String why) {
      decision = Decision.ALLOWED;
      rule = matched;
      reason = why;
    }

    void approve(String why) {
      decision = Decision.APPROVED;
      rule = "approval";
      reason = printable(why);
    }

    /** Adds an outcome (e.g. an upstream failure) to the reason, keeping the decision. */
    void note(String what) {
      reason = reason.equals(NO_REQUEST) ? printable(what) : reason + "; " + printable(what);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // HTTP syntax

  /** A malformed message; the text is safe to show (it is made printable before use). */
  private static class BadMessage extends Exception {
    private static final long serialVersionUID = 1L;

    BadMessage(String message) {
      super(message);
    }

    @Override
    public String getMessage() {
      String m = super.getMessage();
      return m == null ? "malformed message" : m;
    }
  }

  /** The client's request body ended or failed before its declared end. */
  private static final class ClientBodyException extends IOException {
    private static final long serialVersionUID = 1L;

    ClientBodyException(String message, @Nullable Throwable cause) {
      super(message, cause);
    }
  }

  private static final class Header {
    final String name;
    final String lowerName;
    final String value;

    Header(String name, String value) {
      this.name = name;
      this.lowerName = name.toLowerCase(Locale.ROOT);
      this.value = value;
    }
  }

  /** Reads bounded CRLF (or LF) terminated lines as ISO-8859-1, counting the bytes. */
  private static final class LineReader {
    final InputStream in;
    long bytes;

    LineReader(InputStream in) {
      this.in = in;
    }

    /** A line without its terminator; null on end of stream before any byte of it. */
    @Nullable String read(int max, String what) throws IOException, BadMessage {
      StringBuilder sb = new StringBuilder(Math.min(max, 256));
      boolean cr = false;
      while (true) {
        int b = in.read();
        if (b < 0) {
          if (sb.length() == 0 && !cr) {
            return null;
          }
          throw new BadMessage("the " + what + " ends without a line break");
        }
        bytes++;
        if (b == '\n') {
          return sb.toString();
        }
        if (cr) {
          throw new BadMessage("stray CR in the " + what);
        }
        if (b == '\r') {
          cr = true;
          continue;
        }
        if ((b < 0x20 && b != '\t') || b == 0x7f) {
          throw new BadMessage("control character in the " + what);
        }
        if (sb.length() >= max) {
          throw new BadMessage("the " + what + " is longer than " + max + " bytes");
        }
        sb.append((char) b);
      }
    }
  }

  private static final class Head {
    final String startLine;
    final List<Header> headers;

    private Head(String startLine, List<Header> headers) {
      this.startLine = startLine;
      this.headers = headers;
    }

    /** Null when the stream ends before the message starts. */
    static @Nullable Head read(LineReader reader, int maxStartLine, String what)
        throws IOException, BadMessage {
      String start = reader.read(maxStartLine, what + " line");
      // Tolerate a few empty lines before the message (RFC 9112, 2.2).
      for (int i = 0; start != null && start.isEmpty() && i < 4; i++) {
        start = reader.read(maxStartLine, what + " line");
      }
      if (start == null) {
        return null;
      }
      if (start.isEmpty()) {
        throw new BadMessage("the " + what + " starts with empty lines");
      }
      List<Header> headers = new ArrayList<>();
      long budgetStart = reader.bytes;
      while (true) {
        long used = reader.bytes - budgetStart;
        int remaining = (int) Math.max(0, MAX_HEADER_BYTES - used);
        if (remaining == 0) {
          throw new BadMessage("the " + what + " headers exceed " + MAX_HEADER_BYTES + " bytes");
        }
        String line = reader.read(remaining, what + " headers (at most " + MAX_HEADER_BYTES + ")");
        if (line == null) {
          throw new BadMessage("the " + what + " ends before the end of its headers");
        }
        if (line.isEmpty()) {
          return new Head(start, headers);
        }
        if (headers.size() >= MAX_HEADERS) {
          throw new BadMessage("the " + what + " has more than " + MAX_HEADERS + " headers");
        }
        char first = line.charAt(0);
        if (first == ' ' || first == '\t') {
          throw new BadMessage("folded header lines are not allowed");
        }
        int colon = line.indexOf(':');
        if (colon <= 0) {
          throw new BadMessage("malformed header line (no 'name: value')");
        }
        String name = line.substring(0, colon);
        if (!isToken(name)) {
          throw new BadMessage("malformed header name");
        }
        headers.add(new Header(name, line.substring(colon + 1).strip()));
      }
    }

    List<String> all(String lowerName) {
      List<String> out = new ArrayList<>(1);
      for (Header h : headers) {
        if (h.lowerName.equals(lowerName)) {
          out.add(h.value);
        }
      }
      return out;
    }
  }

  /** host[:port] of a request target; host is a name or a (bracketed) IPv6 literal. */
  private static final class Authority {
    final String host; // as written; IPv6 literals keep their brackets
    final int port;

    private Authority(String host, int port) {
      this.host = host;
      this.port = port;
    }

    /** defaultPort -1: the port is required. */
    static Authority parse(String s, int defaultPort) throws BadMessage {
      String host;
      String portText = null;
      if (s.startsWith("[")) {
        int close = s.indexOf(']');
        if (close < 0) {
          throw new BadMessage("unterminated IPv6 literal");
        }
        host = s.substring(0, close + 1);
        String rest = s.substring(close + 1);
        if (!rest.isEmpty()) {
          if (!rest.startsWith(":")) {
            throw new BadMessage("unexpected text after the IPv6 literal");
          }
          portText = rest.substring(1);
        }
      } else {
        int colon = s.indexOf(':');
        if (colon >= 0 && s.indexOf(':', colon + 1) >= 0) {
          throw new BadMessage("IPv6 literals must be in brackets, e.g. [2001:db8::1]:443");
        }
        host = colon < 0 ? s : s.substring(0, colon);
        portText = colon < 0 ? null : s.substring(colon + 1);
      }
      if (host.isEmpty() || host.equals("[]")) {
        throw new BadMessage("the host is empty");
      }
      for (int i = 0; i < host.length(); i++) {
        char c = host.charAt(i);
        if (!(Character.isLetterOrDigit(c) && c < 0x80) && ".-_[]:".indexOf(c) < 0) {
          throw new BadMessage("the host contains invalid characters");
        }
      }
      int port;
      if (portText == null) {
        if (defaultPort < 0) {
          throw new BadMessage("the port is missing");
        }
        port = defaultPort;
      } else {
        if (!portText.matches("[0-9]{1,5}")
            || Integer.parseInt(portText) < 1
            || Integer.parseInt(portText) > 65535) {
          throw new BadMessage("the port must be a number from 1 to 65535");
        }
        port = Integer.parseInt(portText);
      }
      return new Authority(host, port);
    }

    /** For events: a literal's canonical form without brackets, or the name as written. */
    String displayHost() {
      Optional<InetAddress> literal = AddressRules.parseLiteral(host);
      return literal.map(AddressRules::format).orElse(host.toLowerCase(Locale.ROOT));
    }

    String displayTarget() {
      String h = displayHost();
      return (h.indexOf(':') >= 0 ? "[" + h + "]" : h) + ":" + port;
    }

    String hostHeader(String canonicalHost) {
      String h = canonicalHost.indexOf(':') >= 0 ? "[" + canonicalHost + "]" : canonicalHost;
      return port == 80 ? h : h + ":" + port;
    }
  }

  /** How a message body is delimited, and a bounded-buffer copy of exactly that body. */
  private static final class BodyFraming {
    enum Kind {
      NONE,
      LENGTH,
      CHUNKED,
      UNTIL_CLOSE
    }

    final Kind kind;
    final long length;

    private BodyFraming(Kind kind, long length) {
      this.kind = kind;
      this.length = length;
    }

    boolean hasBody() {
      return kind == Kind.CHUNKED || (kind == Kind.LENGTH && length > 0);
    }

    static BodyFraming ofRequest(Head head) throws BadMessage {
      List<String> te = head.all("transfer-encoding");
      List<String> cl = head.all("content-length");
      if (!te.isEmpty()) {
        if (!cl.isEmpty()) {
          throw new BadMessage("both Transfer-Encoding and Content-Length are present");
        }
        if (te.size() != 1 || !te.get(0).equalsIgnoreCase("chunked")) {
          throw new BadMessage("only 'Transfer-Encoding: chunked' is supported in requests");
        }
        return new BodyFraming(Kind.CHUNKED, 0);
      }
      if (!cl.isEmpty()) {
        return new BodyFraming(Kind.LENGTH, contentLength(cl));
      }
      return new BodyFraming(Kind.NONE, 0);
    }

    static BodyFraming ofResponse(Head head, String method, int status) throws BadMessage {
      if (method.equals("HEAD") || status == 204 || status == 304) {
        return new BodyFraming(Kind.NONE, 0);
      }
      List<String> te = head.all("transfer-encoding");
      if (!te.isEmpty()) {
        String last = te.get(te.size() - 1);
        int comma = last.lastIndexOf(',');
        String finalCoding = (comma < 0 ? last : last.substring(comma + 1)).trim();
        return finalCoding.equalsIgnoreCase("chunked")
            ? new BodyFraming(Kind.CHUNKED, 0)
            : new BodyFraming(Kind.UNTIL_CLOSE, 0);
      }
      List<String> cl = head.all("content-length");
      if (!cl.isEmpty()) {
        return new BodyFraming(Kind.LENGTH, contentLength(cl));
      }
      return new BodyFraming(Kind.UNTIL_CLOSE, 0);
    }

    private static long contentLength(List<String> values) throws BadMessage {
      String first = null;
      for (String v : values) {
        for (String part : v.split(",", -1)) {
          String p = part.trim();
          if (!p.matches("[0-9]{1,18}")) {
            throw new BadMessage("invalid Content-Length");
          }
          if (first != null && !first.equals(p)) {
            throw new BadMessage("conflicting Content-Length values");
          }
          first = p;
        }
      }
      if (first == null) {
        throw new BadMessage("invalid Content-Length");
      }
      return Long.parseLong(first);
    }

    /**
     * Copies the body from {@code in} to {@code out}, counting the bytes written. When {@code
     * flushEach}, flushes after each write (streaming to the client). Read failures and a premature
     * end are reported as {@link ClientBodyException}.
     */
    void copy(InputStream in, OutputStream out, AtomicLong count, boolean flushEach)
        throws IOException, BadMessage {
      byte[] buf = new byte[BUFFER_SIZE];
      switch (kind) {
        case NONE -> {}
        case LENGTH -> copyExactly(in, out, length, buf, count, flushEach);
        case UNTIL_CLOSE -> {
          int n;
          while ((n = readBody(in, buf, buf.length)) >= 0) {
            out.write(buf, 0, n);
            if (flushEach) {
              out.flush();
            }
            count.addAndGet(n);
          }
        }
        case CHUNKED -> copyChunked(in, out, buf, count, flushEach);
      }
    }

    private static void copyChunked(
        InputStream in, OutputStream out, byte[] buf, AtomicLong count, boolean flushEach)
        throws IOException, BadMessage {
      LineReader reader = new LineReader(in);
      while (true) {
        String sizeLine = readBodyLine(reader, MAX_CHUNK_LINE, "chunk size line");
        int semi = sizeLine.indexOf(';');
        String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).strip();
        if (!hex.matches("[0-9A-Fa-f]{1,15}")) {
          throw new BadMessage("invalid chunk size");
        }
        long size = Long.parseLong(hex, 16);
        writeLine(out, sizeLine, count);
        if (size == 0) {
          long trailerStart = reader.bytes;
          for (int i = 0; ; i++) {
            long remaining = MAX_HEADER_BYTES - (reader.bytes - trailerStart);
            if (i > MAX_HEADERS || remaining <= 0) {
              throw new BadMessage("the chunked trailer is too large");
            }
            String trailer = readBodyLine(reader, (int) remaining, "chunked trailer");
            writeLine(out, trailer, count);
            if (trailer.isEmpty()) {
              out.flush();
              return;
            }
          }
        }
        copyExactly(in, out, size, buf, count, flushEach);
        String end = readBodyLine(reader, 0, "chunk end");
        if (!end.isEmpty()) {
          throw new BadMessage("missing CRLF after a chunk");
        }
        writeLine(out, "", count);
        if (flushEach) {
          out.flush();
        }
      }
    }

    private static String readBodyLine(LineReader reader, int max, String what)
        throws IOException, BadMessage {
      String line;
      try {
        line = reader.read(max, what);
      } catch (IOException e) {
        throw new ClientBodyException("reading the body failed: " + describe(e), e);
      }
      if (line == null) {
        throw new ClientBodyException("the body ended early", null);
      }
      return line;
    }

    private static void writeLine(OutputStream out, String line, AtomicLong count)
        throws IOException {
      byte[] b = (line + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
      out.write(b);
      count.addAndGet(b.length);
    }

    private static void copyExactly(
        InputStream in,
        OutputStream out,
        long length,
        byte[] buf,
        AtomicLong count,
        boolean flushEach)
        throws IOException {
      long left = length;
      while (left > 0) {
        int n = readBody(in, buf, (int) Math.min(buf.length, left));
        if (n < 0) {
          throw new ClientBodyException("the body ended " + left + " bytes early", null);
        }
        out.write(buf, 0, n);
        if (flushEach) {
          out.flush();
        }
        count.addAndGet(n);
        left -= n;
      }
    }

    private static int readBody(InputStream in, byte[] buf, int len) throws IOException {
      try {
        return in.read(buf, 0, len);
      } catch (IOException e) {
        throw new ClientBodyException("reading the body failed: " + describe(e), e);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Small helpers

  private static boolean isToken(String s) {
    if (s.isEmpty()) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean ok =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  private static boolean isVisibleAscii(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c <= 0x20 || c >= 0x7f) {
        return false;
      }
    }
    return true;
  }

  /** Printable ASCII only, bounded: safe in a header value and in a log line. */
  static String printable(String s) {
    StringBuilder sb = new StringBuilder(Math.min(s.length(), MAX_REASON_CHARS));
    for (int i = 0; i < s.length() && sb.length() < MAX_REASON_CHARS; i++) {
      char c = s.charAt(i);
      sb.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    if (s.length() > MAX_REASON_CHARS) {
      sb.append("...");
    }
    return sb.toString();
  }

  private static String bounded(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }

  private static String describe(Throwable e) {
    String m = e.getMessage();
    if (e instanceof EOFException || m == null || m.isBlank()) {
      return e.getClass().getSimpleName();
    }
    return m;
  }

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

  private static void closeQuietly(@Nullable AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (Exception e) {
      // nothing more to do
    }
  }
}
