package io.agentnest.internal.egress;

import io.agentnest.NetworkPolicy;
import io.agentnest.NetworkPolicy.Injection;
import io.agentnest.NetworkPolicy.Placeholder;
import io.agentnest.RequestRule;
import io.agentnest.internal.support.Bounded;
import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import org.jspecify.annotations.Nullable;

/**
 * Serves a CONNECT tunnel to a host with credential rules: terminates the sandbox's TLS with the
 * sandbox's own CA, opens TLS to the real server with full certificate and host-name verification,
 * and relays HTTP/1.1 requests one after the other (keep-alive, chunked bodies), adding the host's
 * headers and swapping its placeholders. Placeholders of other hosts are never swapped; seeing one
 * is audited as an attempted leak. Every secret is masked in the responses, so an echoing server
 * does not hand it to the sandbox.
 */
final class Interceptor {
  static final int MAX_REQUESTS_PER_CONNECTION = 10_000;

  private final Interception interception;
  private final CredentialAudit audit;
  private final List<byte[]> secrets;
  private final UpstreamPool pool = new UpstreamPool();

  Interceptor(Interception interception, CredentialAudit audit) {
    this.interception = interception;
    this.audit = audit;
    List<byte[]> s = new ArrayList<>();
    NetworkPolicy p = interception.policy();
    p.injections().forEach(i -> s.add(latin1(i.header().secret().reveal())));
    p.placeholders().forEach(ph -> s.add(latin1(ph.secret().reveal())));
    this.secrets = List.copyOf(s);
  }

  /**
   * Serves the tunnel after {@code 200 Connection established}; {@code host} is the canonical
   * CONNECT name. Returns when the connection is over.
   */
  void serve(
      Attempt a, InputStream in, OutputStream out, String host, EgressProxy.Connector connector)
      throws IOException {
    SniCheck.Verdict v = SniCheck.inspect(in, host);
    if (!v.passed()) {
      EgressProxy.answerRefusal(out, v);
      SniCheck.Refusal why = v.refusal();
      a.deny(why == null ? "sni" : why.code, v.reason());
      return;
    }
    SSLEngine engine = interception.ca().serverContext(host).createSSLEngine(host, a.port);
    engine.setUseClientMode(false);
    SSLParameters sp = engine.getSSLParameters();
    // The proxy speaks HTTP/1.1 to both sides: offer nothing else.
    sp.setApplicationProtocols(new String[] {"http/1.1"});
    engine.setSSLParameters(sp);
    TlsServerStreams client =
        new TlsServerStreams(
            engine, new SequenceInputStream(new ByteArrayInputStream(v.consumed()), in), out);
    try {
      client.handshake();
    } catch (IOException e) {
      // A client that rejects our certificate sends an alert or just hangs up mid-handshake.
      a.note(
          "the client refused the sandbox CA's certificate for "
              + host
              + " ("
              + (e instanceof SSLException ? HttpSyntax.describe(e) : "it hung up in the handshake")
              + "): a client that pins certificates or ignores SSL_CERT_FILE cannot reach a host"
              + " with credential rules");
      return;
    }
    UpstreamLink link = new UpstreamLink(a, host, connector, pool, interception.upstreamContext());
    try {
      link.start();
    } catch (UpstreamLink.UpstreamFailure e) {
      link.refuse(e, client.output);
      client.closeOutbound();
      return;
    }
    try {
      relay(a, host, client, link);
    } finally {
      link.release();
      client.closeOutbound();
    }
  }

  /** Closes the idle upstream connections (the sandbox is going away). */
  void close() {
    pool.close();
  }

  private void relay(Attempt a, String host, TlsServerStreams client, UpstreamLink link)
      throws IOException {
    BufferedInputStream cin = new BufferedInputStream(client.input, 16 * 1024);
    OutputStream cout = client.output;
    AtomicLong upBytes = a.up;
    AtomicLong downBytes = a.down;
    CredentialUses uses = new CredentialUses(audit, host);
    try {
      for (int n = 0; n < MAX_REQUESTS_PER_CONNECTION; n++) {
        if (!exchange(a, host, cin, cout, link, upBytes, downBytes, uses, n == 0)) {
          return;
        }
      }
    } finally {
      uses.close();
    }
  }

  /** One request and its response; false when the connection ends. */
  private boolean exchange(
      Attempt a,
      String host,
      BufferedInputStream cin,
      OutputStream cout,
      UpstreamLink link,
      AtomicLong upBytes,
      AtomicLong downBytes,
      CredentialUses uses,
      boolean firstOnConnection)
      throws IOException {
    link.reusable = false;
    Head head;
    try {
      if (!firstOnConnection) {
        a.awaitHead(a.headDeadline, "next request head");
      }
      Head h = Head.read(new LineReader(cin), EgressProxy.MAX_REQUEST_LINE, "request");
      a.headRead();
      if (h == null || a.expired() != null) {
        return false;
      }
      head = h;
    } catch (BadMessage e) {
      if (a.expired() != null) {
        return false;
      }
      refuse(a, cout, 400, "Bad Request", "bad request: " + e.getMessage());
      return false;
    }
    String[] parts = head.startLine.split(" ", -1);
    if (parts.length != 3
        || !HttpSyntax.isToken(parts[0])
        || !(parts[2].equals("HTTP/1.1") || parts[2].equals("HTTP/1.0"))
        || !HttpSyntax.isVisibleAscii(parts[1])) {
      refuse(a, cout, 400, "Bad Request", "the request line must be 'METHOD /path HTTP/1.1'");
      return false;
    }
    if (interception.ended()) {
      // A host operation's grant is over: a connection kept alive past it gets no credential;
      // it ends, and the client's next connection is an opaque tunnel.
      a.note("the host operation this connection's credential belonged to has ended");
      return false;
    }
    String method = parts[0];
    String version = parts[2];
    Optional<String> path = originForm(parts[1], host, a.port);
    if (path.isEmpty()) {
      refuse(
          a,
          cout,
          400,
          "Bad Request",
          "the request target must be a path on " + host + " (this connection is to " + host + ")");
      return false;
    }
    List<String> hosts = head.all("host");
    if (hosts.size() != 1 || !sameHost(hosts.get(0), host, a.port)) {
      refuse(
          a,
          cout,
          421,
          "Misdirected Request",
          "the Host header must name " + host + ", the host this connection was opened to");
      return false;
    }
    BodyFraming framing;
    try {
      framing = BodyFraming.ofRequest(head, version);
    } catch (BadMessage e) {
      refuse(a, cout, 400, "Bad Request", "bad request: " + e.getMessage());
      return false;
    }
    if (!allowedByRules(a, host, method, path.get(), cout)) {
      return false; // the body was not read: the connection ends with the refusal
    }
    boolean close = version.equals("HTTP/1.0") || hasToken(head, "close");

    List<Injection> injections = interception.injections(host);
    Set<String> replaced = new HashSet<>();
    injections.forEach(i -> replaced.add(i.header().name().toLowerCase(Locale.ROOT)));
    Set<Placeholder> swapped = new HashSet<>();
    Set<Placeholder> leaked = new HashSet<>();
    scanLeaks(path.get(), host, leaked);

    StringBuilder sb = new StringBuilder(512);
    sb.append(method).append(' ').append(path.get()).append(' ').append(version).append("\r\n");
    Set<String> strip = EgressProxy.strippedHeaders(head);
    for (HeaderField h : head.headers) {
      scanLeaks(h.value, host, leaked);
      if (strip.contains(h.lowerName)
          || replaced.contains(h.lowerName)
          || h.lowerName.equals("accept-encoding")) {
        continue;
      }
      String value = swap(h.value, host, interception.placeholderTokens(), swapped);
      sb.append(h.name).append(": ").append(value).append("\r\n");
    }
    for (Injection i : injections) {
      sb.append(i.header().name()).append(": ").append(i.header().value()).append("\r\n");
    }
    // The response is masked on its decoded bytes: ask for none of the codings, and undo the ones
    // a server applies anyway (DecodedBody).
    sb.append("Accept-Encoding: identity\r\n");
    // Connection is hop-by-hop: the client's close ends the client's connection only, and the
    // verified upstream connection may serve the sandbox's next tunnel to this host.
    sb.append("\r\n");
    String shownPath = Bounded.text(path.get(), 512);
    for (Placeholder p : leaked) {
      audit.leakAttempt(p.secretName(), p.host(), host, method, shownPath);
    }
    byte[] requestHead = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    boolean hasBody = framing.kind != BodyFraming.Kind.NONE;
    UpstreamPool.Upstream up;
    Head first;
    try {
      up = link.forRequest(hasBody);
      first = send(up, requestHead, framing, cin, upBytes, downBytes);
      if (first == null && link.retry()) {
        // The pooled connection was closed by the server while idle: once more on a new one.
        link.discard();
        up = link.fresh();
        first = send(up, requestHead, framing, cin, upBytes, downBytes);
      }
    } catch (UpstreamLink.UpstreamFailure e) {
      link.refuse(e, cout);
      return false;
    } catch (BadResponse e) {
      a.note("bad response from " + host + ": " + e.getMessage());
      return false;
    } catch (BadMessage e) {
      refuse(a, cout, 400, "Bad Request", "bad request body: " + e.getMessage());
      return false;
    } catch (IOException e) {
      if (!link.retry() || hasBody) {
        throw e;
      }
      link.discard();
      try {
        up = link.fresh();
        first = send(up, requestHead, framing, cin, upBytes, downBytes);
      } catch (UpstreamLink.UpstreamFailure f) {
        link.refuse(f, cout);
        return false;
      } catch (BadResponse f) {
        a.note("bad response from " + host + ": " + f.getMessage());
        return false;
      } catch (BadMessage f) {
        refuse(a, cout, 400, "Bad Request", "bad request body: " + f.getMessage());
        return false;
      }
    }
    link.pooled = false;
    BufferedInputStream uin = up.in();

    boolean[] audited = {false};
    IntConsumer auditUses =
        status -> {
          if (audited[0]) {
            return;
          }
          audited[0] = true;
          for (Injection i : injections) {
            uses.used(
                i.header().secretName(), CredentialAudit.Kind.INJECTED, method, shownPath, status);
          }
          for (Placeholder p : swapped) {
            uses.used(p.secretName(), CredentialAudit.Kind.PLACEHOLDER, method, shownPath, status);
          }
        };
    boolean keep;
    try {
      // Uses are recorded once the status is known, before the body: a client that has its
      // response can find the record.
      keep = relayResponse(a, host, method, version, first, close, uin, cout, downBytes, auditUses);
    } catch (BadMessage e) {
      a.note("bad response from " + host + ": " + e.getMessage());
      keep = false;
    } finally {
      auditUses.accept(0);
    }
    link.reusable = keep;
    return keep && !close;
  }

  /**
   * Sends one request (head, then the body from the client) and reads the first response head; null
   * when the server closed the connection without answering.
   */
  private static @Nullable Head send(
      UpstreamPool.Upstream up,
      byte[] requestHead,
      BodyFraming framing,
      InputStream cin,
      AtomicLong upBytes,
      AtomicLong downBytes)
      throws IOException, BadMessage, BadResponse {
    OutputStream uout = up.out();
    uout.write(requestHead);
    upBytes.addAndGet(requestHead.length);
    framing.copy(cin, uout, upBytes, false);
    uout.flush();
    LineReader reader = new LineReader(up.in());
    try {
      return Head.read(reader, EgressProxy.MAX_REQUEST_LINE, "response");
    } catch (BadMessage e) {
      throw new BadResponse(String.valueOf(e.getMessage()));
    } finally {
      downBytes.addAndGet(reader.bytes);
    }
  }

  /** The server's response head could not be read (a request body's problem is a BadMessage). */
  static final class BadResponse extends Exception {
    private static final long serialVersionUID = 1L;

    BadResponse(String message) {
      super(message);
    }
  }

  /**
   * Relays one response (after any 1xx), telling {@code onStatus} its status before the body; true
   * when the connection may carry another request. The body is masked on its decoded bytes and
   * re-framed for the client (chunked to HTTP/1.1, to the close for HTTP/1.0) unless it came as is
   * with a length, which masking keeps.
   */
  private boolean relayResponse(
      Attempt a,
      String host,
      String method,
      String clientVersion,
      @Nullable Head first,
      boolean clientClose,
      BufferedInputStream uin,
      OutputStream cout,
      AtomicLong down,
      IntConsumer onStatus)
      throws IOException, BadMessage {
    LineReader reader = new LineReader(uin);
    Head next = first;
    boolean firstRead = true;
    while (true) {
      Head response;
      if (firstRead) {
        firstRead = false;
        response = next;
      } else {
        long before = reader.bytes;
        response = Head.read(reader, EgressProxy.MAX_REQUEST_LINE, "response");
        down.addAndGet(reader.bytes - before);
      }
      if (response == null) {
        throw new BadMessage("the server closed the connection without a response");
      }
      int status = EgressProxy.statusOf(response.startLine);
      if (status == 101) {
        throw new BadMessage("the server switched protocols, which the proxy cannot relay");
      }
      boolean interim = status >= 100 && status < 200;
      BodyFraming framing =
          interim ? BodyFraming.none() : BodyFraming.ofResponse(response, method, status);
      List<String> codings =
          framing.kind == BodyFraming.Kind.NONE ? List.of() : DecodedBody.codings(response);
      String refused = DecodedBody.undecodable(codings);
      if (refused != null) {
        onStatus.accept(status);
        refuse(
            a,
            cout,
            502,
            "Bad Gateway",
            host
                + " answered with the coding '"
                + HttpSyntax.printable(Bounded.text(refused, 40))
                + "', which the proxy cannot decode to mask the credential in it (the proxy asks"
                + " for 'Accept-Encoding: identity'; gzip and deflate are decoded)");
        return false;
      }
      // As is: a body with a length and no coding (masking keeps its length). Otherwise decoded
      // and framed anew.
      boolean asIs =
          framing.kind == BodyFraming.Kind.NONE
              || (codings.isEmpty() && framing.kind != BodyFraming.Kind.CHUNKED);
      boolean chunkedOut = !asIs && clientVersion.equals("HTTP/1.1");
      boolean untilClose = framing.kind == BodyFraming.Kind.UNTIL_CLOSE || (!asIs && !chunkedOut);
      boolean close =
          response.startLine.startsWith("HTTP/1.0") || hasToken(response, "close") || untilClose;
      StringBuilder sb = new StringBuilder(512);
      sb.append(response.startLine).append("\r\n");
      Set<String> strip = EgressProxy.strippedHeaders(response);
      for (HeaderField h : response.headers) {
        boolean reframed =
            !asIs
                && (h.lowerName.equals("content-length")
                    || h.lowerName.equals("transfer-encoding")
                    || h.lowerName.equals("content-encoding"));
        if (!strip.contains(h.lowerName) && !reframed) {
          sb.append(h.name).append(": ").append(h.value).append("\r\n");
        }
      }
      if (chunkedOut) {
        sb.append("Transfer-Encoding: chunked\r\n");
      }
      if (!interim && (close || clientClose)) {
        // The client's own close is answered here: upstream, Connection is not forwarded.
        sb.append("Connection: close\r\n");
      }
      sb.append("\r\n");
      cout.write(
          MaskingOutputStream.mask(sb.toString().getBytes(StandardCharsets.ISO_8859_1), secrets));
      cout.flush();
      if (interim) {
        continue;
      }
      onStatus.accept(status);
      DecodedBody.relay(framing, codings, chunkedOut, uin, cout, down, secrets);
      return !close;
    }
  }

  /**
   * Whether the host's request rules (if any) allow this request; otherwise answers it (400 for a
   * path the proxy will not compare, 403 for one outside the rules), audits it, and returns false.
   */
  private boolean allowedByRules(
      Attempt a, String host, String method, String path, OutputStream cout) throws IOException {
    List<RequestRule> rules = interception.policy().requestRules(host);
    if (rules.isEmpty()) {
      return true;
    }
    String shown = Bounded.text(path, 512);
    Optional<String> ambiguous = RequestRule.ambiguity(path);
    if (ambiguous.isPresent()) {
      String why =
          "the path of "
              + method
              + " "
              + shown
              + " is ambiguous ("
              + ambiguous.get()
              + "): "
              + host
              + " has request rules, so the proxy forwards only plain paths";
      audit.requestDenied(host, method, shown, "ambiguous-path", why);
      refuse(a, cout, 400, "Bad Request", why);
      return false;
    }
    for (RequestRule r : rules) {
      if (r.allows(method, path)) {
        return true;
      }
    }
    String why =
        method
            + " "
            + shown
            + " is outside the request rules of "
            + host
            + " ("
            + String.join("; ", rules.stream().map(RequestRule::describe).toList())
            + "): not forwarded";
    audit.requestDenied(host, method, shown, "request-rules", why);
    refuse(a, cout, 403, "Forbidden", why);
    return false;
  }

  /**
   * {@code value} with the placeholders of {@code host}'s own rules swapped for their secrets
   * (added to {@code swapped}); every other placeholder stays as it is.
   */
  static String swap(
      String value, String host, Map<Placeholder, String> tokens, Set<Placeholder> swapped) {
    String out = value;
    for (Map.Entry<Placeholder, String> e : tokens.entrySet()) {
      Placeholder p = e.getKey();
      if (p.host().equals(host) && out.contains(e.getValue())) {
        out = out.replace(e.getValue(), p.secret().reveal());
        swapped.add(p);
      }
    }
    return out;
  }

  private void scanLeaks(String text, String host, Set<Placeholder> leaked) {
    for (Placeholder p : interception.placeholders()) {
      if (!p.host().equals(host) && text.contains(interception.valueOf(p))) {
        leaked.add(p);
      }
    }
  }

  private static void refuse(Attempt a, OutputStream out, int status, String phrase, String reason)
      throws IOException {
    a.note(reason);
    EgressProxy.respond(out, status, phrase, reason, false);
  }

  /** The path of an origin-form target, or of an absolute https:// target naming this host. */
  private static Optional<String> originForm(String target, String host, int port) {
    if (target.startsWith("/")) {
      return Optional.of(target);
    }
    String lower = target.toLowerCase(Locale.ROOT);
    if (!lower.startsWith("https://")) {
      return Optional.empty();
    }
    String rest = target.substring("https://".length());
    int slash = rest.indexOf('/');
    String authority = slash < 0 ? rest : rest.substring(0, slash);
    if (!sameHost(authority, host, port)) {
      return Optional.empty();
    }
    return Optional.of(slash < 0 ? "/" : rest.substring(slash));
  }

  private static boolean sameHost(String authority, String host, int port) {
    try {
      Authority h = Authority.parse(authority.trim(), 443);
      return h.port == port && NetworkPolicy.normalizeHost(h.host).equals(Optional.of(host));
    } catch (BadMessage e) {
      return false;
    }
  }

  private static boolean hasToken(Head head, String token) {
    for (String value : head.all("connection")) {
      for (String t : value.split(",")) {
        if (t.trim().equalsIgnoreCase(token)) {
          return true;
        }
      }
    }
    return false;
  }

  private static byte[] latin1(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }
}
