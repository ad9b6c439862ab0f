package io.agentnest.internal.egress;

import io.agentnest.IpAddresses;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.util.List;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.apache.commons.io.IOUtils;
import org.jspecify.annotations.Nullable;

/**
 * The upstream side of one intercepted tunnel: a verified connection from the pool, or a new one;
 * handed back to the pool at the end when its last response left it open.
 */
final class UpstreamLink {
  final Attempt a;
  final String host;
  final String target;
  final EgressProxy.Connector connector;
  UpstreamPool.@Nullable Upstream up;

  /** {@code up} came from the pool and has not answered yet: it may have gone stale. */
  boolean pooled;

  /** The last response completed and left the connection open. */
  boolean reusable;

  private final UpstreamPool pool;
  private final SSLContext upstreamContext;

  UpstreamLink(
      Attempt a,
      String host,
      EgressProxy.Connector connector,
      UpstreamPool pool,
      SSLContext upstreamContext) {
    this.pool = pool;
    this.upstreamContext = upstreamContext;
    this.a = a;
    this.host = host;
    this.target = host + ":" + a.port;
    this.connector = connector;
  }

  void start() throws UpstreamFailure {
    UpstreamPool.Upstream u = pool.take(target);
    if (u != null) {
      up = u;
      pooled = true;
      a.resolved = IpAddresses.format(u.socket().getInetAddress());
      a.closeOnAbort(u.socket()); // a reused connection is this attempt's to close now
      return;
    }
    fresh();
  }

  /** The connection for a request; a pooled one is not trusted with a body it cannot resend. */
  UpstreamPool.Upstream forRequest(boolean hasBody) throws UpstreamFailure {
    UpstreamPool.Upstream u = up;
    if (u == null || (pooled && hasBody)) {
      discard();
      return fresh();
    }
    return u;
  }

  /** A stale pooled connection failed before answering: replace it with a new one. */
  boolean retry() {
    return pooled;
  }

  UpstreamPool.Upstream fresh() throws UpstreamFailure {
    Socket raw;
    try {
      raw = connector.open();
    } catch (IOException e) {
      throw new UpstreamFailure(String.valueOf(e.getMessage()), null);
    }
    SSLSocket s;
    try {
      s = upstreamTls(raw, host, a.port);
    } catch (IOException e) {
      IOUtils.closeQuietly(raw);
      throw new UpstreamFailure(
          "cannot verify "
              + host
              + ":"
              + a.port
              + " (its certificate or name did not verify): "
              + HttpSyntax.describe(e),
          "upstream-tls");
    }
    try {
      UpstreamPool.Upstream u =
          new UpstreamPool.Upstream(
              s,
              new BufferedInputStream(s.getInputStream(), 16 * 1024),
              s.getOutputStream(),
              System.nanoTime());
      up = u;
      pooled = false;
      return u;
    } catch (IOException e) {
      IOUtils.closeQuietly(s);
      throw new UpstreamFailure("cannot use the connection to " + target + ": " + e, null);
    }
  }

  /** Answers the client with 502 and records why. */
  void refuse(UpstreamFailure e, OutputStream out) throws IOException {
    String why = String.valueOf(e.getMessage());
    if (e.code != null) {
      a.deny(e.code, why);
    } else {
      a.note(why);
    }
    EgressProxy.respond(out, 502, "Bad Gateway", why, false);
  }

  /**
   * Whether the server has sent nothing beyond the last response: bytes it sent unasked would be
   * read as the answer to the next tunnel's request.
   */
  private boolean nothingPending(UpstreamPool.Upstream u) {
    try {
      return u.in().available() == 0;
    } catch (IOException e) {
      return false;
    }
  }

  void discard() {
    UpstreamPool.Upstream u = up;
    if (u != null) {
      u.close();
    }
    up = null;
    pooled = false;
    reusable = false;
  }

  void release() {
    UpstreamPool.Upstream u = up;
    if (u != null && reusable && nothingPending(u)) {
      up = null;
      pool.offer(target, u);
    } else {
      discard();
    }
  }

  private SSLSocket upstreamTls(Socket raw, String host, int port) throws IOException {
    SSLSocket s =
        (SSLSocket) upstreamContext.getSocketFactory().createSocket(raw, host, port, true);
    SSLParameters p = s.getSSLParameters();
    p.setEndpointIdentificationAlgorithm("HTTPS");
    p.setServerNames(List.of(new SNIHostName(host)));
    p.setApplicationProtocols(new String[] {"http/1.1"});
    s.setSSLParameters(p);
    // A server that never finishes its handshake must not hold the connection forever.
    raw.setSoTimeout(EgressProxy.CONNECT_TIMEOUT_MS);
    s.startHandshake();
    raw.setSoTimeout(0);
    return s;
  }

  /** Why no verified upstream connection could be had; {@code code} null: not a refusal. */
  static final class UpstreamFailure extends IOException {
    private static final long serialVersionUID = 1L;
    final @Nullable String code;

    UpstreamFailure(String message, @Nullable String code) {
      super(message);
      this.code = code;
    }
  }
}
