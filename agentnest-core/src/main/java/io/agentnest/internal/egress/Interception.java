package io.agentnest.internal.egress;

import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.NetworkPolicy.Injection;
import io.agentnest.NetworkPolicy.Placeholder;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;

/**
 * What one sandbox's proxy needs to terminate TLS for the hosts with credential rules: the
 * sandbox's own CA (key in this process only), the random placeholder value of each placeholder
 * variable (fresh per sandbox, so one sandbox's placeholder is nothing in another), and the TLS
 * context that verifies the real servers.
 */
public final class Interception {
  /** Where the agent writes the combined trust bundle (the system's CAs and the sandbox's). */
  public static final String BUNDLE_PATH = "/tmp/.agentnest/ca-bundle.pem";

  /** The variables that point common clients at {@link #BUNDLE_PATH}. */
  public static final List<String> TRUST_VARIABLES =
      List.of(
          "SSL_CERT_FILE",
          "REQUESTS_CA_BUNDLE",
          "NODE_EXTRA_CA_CERTS",
          "CURL_CA_BUNDLE",
          "GIT_SSL_CAINFO");

  private static final String PLACEHOLDER_PREFIX = "agentnest-placeholder-";
  private static final SecureRandom RANDOM = new SecureRandom();

  private final NetworkPolicy policy;
  private final InterceptionCa ca;
  private final Map<String, String> placeholderValues; // env -> value
  private final SSLContext upstream;

  /** An operation's interception ends with its grant; a policy's lasts the sandbox's life. */
  private volatile boolean ended;

  private Interception(
      NetworkPolicy policy, InterceptionCa ca, Map<String, String> values, SSLContext upstream) {
    this.policy = policy;
    this.ca = ca;
    this.placeholderValues = Map.copyOf(values);
    this.upstream = upstream;
  }

  /** The interception of a sandbox whose policy has credential rules; empty otherwise. */
  public static Optional<Interception> forPolicy(
      NetworkPolicy policy, String label, Duration lifetime) {
    return forPolicy(policy, label, lifetime, UpstreamTrust.context());
  }

  /**
   * With an explicit upstream trust (the benchmark's own origin CA); package-private on purpose.
   */
  static Optional<Interception> forPolicy(
      NetworkPolicy policy, String label, Duration lifetime, SSLContext upstream) {
    if (!policy.hasCredentials()) {
      return Optional.empty();
    }
    InterceptionCa ca = InterceptionCa.create(label, policy.credentialHosts(), lifetime);
    Map<String, String> values = new LinkedHashMap<>();
    for (Placeholder p : policy.placeholders()) {
      byte[] b = new byte[24];
      RANDOM.nextBytes(b);
      values.put(p.env(), PLACEHOLDER_PREFIX + HexFormat.of().formatHex(b));
    }
    return Optional.of(new Interception(policy, ca, values, upstream));
  }

  /**
   * The interception of one host operation's remote ({@link OperationCredentials}): a CA of its own
   * for {@code host} alone and {@code header} on every request to it, nothing else.
   */
  static Interception forOperation(
      String host, Header header, Duration lifetime, SSLContext upstream) {
    // The policy only carries the injection: what may be reached is the sandbox's own policy,
    // checked by the proxy before any tunnel is intercepted.
    NetworkPolicy p = NetworkPolicy.builder().allow(host).inject(host, header).build();
    InterceptionCa ca = InterceptionCa.create("git operation", List.of(host), lifetime);
    return new Interception(p, ca, Map.of(), upstream);
  }

  public InterceptionCa ca() {
    return ca;
  }

  /** The sandbox's placeholder variables: name to opaque value. */
  public Map<String, String> placeholderEnv() {
    return placeholderValues;
  }

  /** The placeholder value standing for {@code p}. */
  String valueOf(Placeholder p) {
    String v = placeholderValues.get(p.env());
    if (v == null) {
      throw new IllegalArgumentException("no placeholder " + p.env());
    }
    return v;
  }

  NetworkPolicy policy() {
    return policy;
  }

  /** Each placeholder rule and the opaque value standing for it in the sandbox. */
  Map<Placeholder, String> placeholderTokens() {
    Map<Placeholder, String> m = new LinkedHashMap<>();
    policy.placeholders().forEach(p -> m.put(p, valueOf(p)));
    return m;
  }

  boolean intercepts(String host) {
    return ca.hosts().contains(host);
  }

  List<Injection> injections(String host) {
    return policy.injections().stream().filter(i -> i.host().equals(host)).toList();
  }

  List<Placeholder> placeholders() {
    return policy.placeholders();
  }

  /** Ends an operation's interception: connections still open forward no further request. */
  void end() {
    ended = true;
  }

  boolean ended() {
    return ended;
  }

  SSLContext upstreamContext() {
    return upstream;
  }
}
