package io.agentnest.internal.egress;

import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Credentials the proxy adds for one host operation (a git clone, fetch or push) while it runs: the
 * header goes on the requests to exactly that scheme, host and port, added by the proxy on the
 * host's side, so no process in the sandbox ever holds the secret (nor anything that could ask for
 * it). For {@code https}, the proxy terminates the TLS of tunnels to that host with a CA of the
 * operation's own (name-constrained to the host, key in this process only), whose certificate the
 * operation's client is told to trust; for {@code http}, it adds the header to forwarded requests.
 * Closing the grant ends it: later requests go out as they came.
 *
 * <p>Thread-safe.
 */
public final class OperationCredentials {
  /** At most this many operations hold credentials at once in one sandbox. */
  static final int MAX_OPEN = 8;

  private final CredentialAudit audit;
  private final Map<Key, Grant> open = new ConcurrentHashMap<>();

  private record Key(String scheme, String host, int port) {}

  OperationCredentials(CredentialAudit audit) {
    this.audit = audit;
  }

  /**
   * Opens a grant: until it is closed, requests to {@code scheme://host:port} carry {@code header}.
   *
   * @param host the remote's host name (not an address: an HTTPS address has no name to certify)
   * @throws IllegalStateException when an operation on the same remote already holds one, or too
   *     many do
   */
  public Grant open(String scheme, String host, int port, Header header, Duration lifetime) {
    String s = scheme.toLowerCase(Locale.ROOT);
    if (!s.equals("http") && !s.equals("https")) {
      throw new IllegalArgumentException("only http and https remotes get credentials: " + scheme);
    }
    String name =
        NetworkPolicy.normalizeHost(host)
            .orElseThrow(() -> new IllegalArgumentException("not a host name: " + host));
    Key key = new Key(s, name, port);
    if (open.size() >= MAX_OPEN) {
      throw new IllegalStateException(
          "more than " + MAX_OPEN + " operations with credentials at once in one sandbox");
    }
    Interception interception = null;
    Interceptor interceptor = null;
    if (s.equals("https")) {
      interception = Interception.forOperation(name, header, lifetime, UpstreamTrust.context());
      interceptor = new Interceptor(interception, audit);
    }
    Grant g = new Grant(key, header, interception, interceptor);
    if (open.putIfAbsent(key, g) != null) {
      if (interceptor != null) {
        interceptor.close();
      }
      throw new IllegalStateException(
          "another operation on " + s + "://" + name + ":" + port + " is running; try again");
    }
    return g;
  }

  /** The grant open for an https tunnel to {@code host:port}, if any. */
  @Nullable Grant https(String host, int port) {
    return open.get(new Key("https", host, port));
  }

  /** The grant open for plain http requests to {@code host:port}, if any. */
  @Nullable Grant http(String host, int port) {
    return open.get(new Key("http", host, port));
  }

  CredentialAudit audit() {
    return audit;
  }

  /** Ends every grant (the sandbox is going away). */
  void closeAll() {
    List.copyOf(open.values()).forEach(Grant::close);
  }

  /** One operation's credentials; {@link #close()} ends them. */
  public final class Grant implements AutoCloseable {
    private final Key key;
    private final Header header;
    private final @Nullable Interception interception;
    private final @Nullable Interceptor interceptor;

    private Grant(
        Key key,
        Header header,
        @Nullable Interception interception,
        @Nullable Interceptor interceptor) {
      this.key = key;
      this.header = header;
      this.interception = interception;
      this.interceptor = interceptor;
    }

    /** The operation CA's certificate as PEM (public), for the client to trust; empty for http. */
    public String caPem() {
      Interception i = interception;
      return i == null ? "" : i.ca().certificatePem();
    }

    Header header() {
      return header;
    }

    /** What a reflecting server must not hand back: the header's secret. */
    List<byte[]> secrets() {
      return List.of(header.secret().reveal().getBytes(StandardCharsets.ISO_8859_1));
    }

    @Nullable Interceptor interceptor() {
      return interceptor;
    }

    @Override
    public void close() {
      if (open.remove(key, this)) {
        Interception ended = interception;
        if (ended != null) {
          ended.end(); // tunnels opened during the operation and kept alive get nothing more
        }
        Interceptor i = interceptor;
        if (i != null) {
          i.close();
        }
      }
    }

    @Override
    public String toString() {
      return "grant for " + key.scheme + "://" + key.host + ":" + key.port;
    }
  }
}
