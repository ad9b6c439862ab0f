package io.agentnest;

import java.net.IDN;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Which network destinations code in a sandbox may reach through AgentNest's egress proxy.
 * Immutable; the default, {@link #none()}, denies everything. {@link Builder#build()} validates
 * every rule and names the field and the fix when one is wrong.
 *
 * <pre>{@code
 * NetworkPolicy policy = NetworkPolicy.builder()
 *     .allow("pypi.org")                 // exactly pypi.org, ports 80 and 443
 *     .allow("*.pythonhosted.org")       // files.pythonhosted.org, a.b.pythonhosted.org; not the bare name
 *     .allow("registry.example.com:8443")// only port 8443
 *     .allowAddress("10.20.0.0/16")      // names may resolve into this private range; IP targets in it too
 *     .onUnknownHost(NetworkPolicy.Mode.ASK)  // ask an ApprovalHandler about everything else
 *     .approvalTimeout(Duration.ofSeconds(30))
 *     .build();
 *
 * policy.match("files.pythonhosted.org", 443);   // Optional[Match[rule=*.pythonhosted.org, ...]]
 * policy.match("evil-pythonhosted.org", 443);    // Optional.empty
 * }</pre>
 *
 * <p>Rules:
 *
 * <ul>
 *   <li>A name ({@code pypi.org}) matches exactly that host; a wildcard ({@code *.pypi.org})
 *       matches names up to {@value #WILDCARD_DEPTH} labels below it ({@code a.b.c.pypi.org}, not
 *       {@code a.b.c.d.pypi.org}: every extra label is room for data sent out through name
 *       lookups), but neither the bare domain nor names that merely end with the same text ({@code
 *       evil-pypi.org}). A wildcard must name at least a second-level domain ({@code *.com} is
 *       refused).
 *   <li>Public DNS resolvers' DNS-over-HTTPS names ({@code dns.google}, {@code cloudflare-dns.com},
 *       ...) are reached only through a rule that names them exactly, never through a wildcard
 *       (they would give sandbox code a resolver of its own); a wildcard never allows port 853 (DNS
 *       over TLS).
 *   <li>Without a port a rule allows ports 80 and 443; {@code host:8443} allows only that port.
 *   <li>Names are compared case-insensitively, without a trailing dot, and internationalised names
 *       in their ASCII (punycode) form as {@link IDN#toASCII(String)} produces it: {@code
 *       bücher.example} and {@code xn--bcher-kva.example} are the same rule.
 *   <li>IP addresses are not names: targets given as IP literals are refused, and so are names
 *       resolving to loopback, private, link-local (cloud metadata), multicast and other non-public
 *       addresses, unless {@link Builder#allowAddress(String)} covers the address (then on any
 *       port).
 * </ul>
 */
public final class NetworkPolicy {
  /** The ports a rule without an explicit port allows. */
  public static final Set<Integer> DEFAULT_PORTS = Set.of(80, 443);

  /** Default of {@link Builder#approvalTimeout(Duration)}. */
  public static final Duration DEFAULT_APPROVAL_TIMEOUT = Duration.ofSeconds(60);

  /** How many labels a wildcard's match may add to its domain ({@code *.x.org}: a.b.c.x.org). */
  public static final int WILDCARD_DEPTH = 3;

  private static final NetworkPolicy NONE = builder().build();

  /** What happens to a destination that no rule allows. */
  public enum Mode {
    /** Refuse it (the default). */
    DENY,
    /** Ask the sandbox's {@link ApprovalHandler}; no answer within the approval timeout denies. */
    ASK
  }

  /**
   * The rule that allowed a destination.
   *
   * @param rule the rule in canonical form, e.g. {@code *.pythonhosted.org}, {@code
   *     example.com:8443} or, for an address allowance, {@code 127.0.0.0/8}
   * @param address whether it is an {@code allowAddress} range rather than a name rule
   */
  public record Match(String rule, boolean address) {
    public Match {
      Objects.requireNonNull(rule, "rule");
    }
  }

  /**
   * A header the proxy adds to every HTTPS request to {@code host} (see {@link
   * Builder#inject(String, Header)}).
   */
  public record Injection(String host, Header header) {
    public Injection {
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(header, "header");
    }
  }

  /**
   * An environment variable {@code env} whose value in the sandbox is an opaque placeholder; the
   * proxy swaps the placeholder for {@code secret} in the headers of HTTPS requests to {@code host}
   * only (see {@link Builder#placeholder(String, String, Secret)}).
   */
  public record Placeholder(String host, String env, Secret secret) {
    public Placeholder {
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(env, "env");
      Objects.requireNonNull(secret, "secret");
    }

    /** The name audit records use: the secret's own, else the variable's. */
    public String secretName() {
      return secret.name().orElse(env);
    }
  }

  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");

  private final List<HostRule> rules;
  private final List<IpAddresses.Range> addresses;
  private final Mode mode;
  private final Duration approvalTimeout;
  private final List<Injection> injections;
  private final List<Placeholder> placeholders;
  private final Map<String, List<RequestRule>> requestRules;
  private final boolean rememberDecisions;

  private NetworkPolicy(
      List<HostRule> rules,
      List<IpAddresses.Range> addresses,
      Builder b,
      List<Injection> injections,
      List<Placeholder> placeholders,
      Map<String, List<RequestRule>> requestRules) {
    this.rules = List.copyOf(rules);
    this.addresses = List.copyOf(addresses);
    this.mode = b.mode;
    this.approvalTimeout = b.approvalTimeout;
    this.injections = List.copyOf(injections);
    this.placeholders = List.copyOf(placeholders);
    Map<String, List<RequestRule>> r = new LinkedHashMap<>();
    requestRules.forEach((h, l) -> r.put(h, List.copyOf(l)));
    this.requestRules = Collections.unmodifiableMap(r);
    this.rememberDecisions = b.rememberDecisions;
  }

  /** Most request rules one host may have. */
  public static final int MAX_REQUEST_RULES = 64;

  /**
   * The request rules of each credential host that has some ({@link Builder#restrict}); a host
   * without an entry is not restricted beyond the allowlist.
   */
  public Map<String, List<RequestRule>> requestRules() {
    return requestRules;
  }

  /** The request rules of {@code host} (canonical name); empty: every request is forwarded. */
  public List<RequestRule> requestRules(String host) {
    return requestRules.getOrDefault(host, List.of());
  }

  /**
   * Whether a person's answer about a host:port outside the allowlist (ASK mode) holds for the rest
   * of the sandbox's life (the default), rather than being asked again for every connection.
   */
  public boolean remembersDecisions() {
    return rememberDecisions;
  }

  /**
   * A builder allowing {@code rules}, to add credentials to: {@code
   * NetworkPolicy.allow("api.github.com") .inject("api.github.com",
   * Header.bearer(Secret.fromEnv("GITHUB_TOKEN"))).build()}.
   */
  public static Builder allow(String... rules) {
    Builder b = builder();
    for (String r : rules) {
      b.allow(r);
    }
    return b;
  }

  /** The headers the proxy injects, in the order given. */
  public List<Injection> injections() {
    return injections;
  }

  /** The placeholder variables the proxy swaps, in the order given. */
  public List<Placeholder> placeholders() {
    return placeholders;
  }

  /** Whether any credential rule makes the proxy terminate TLS for some host. */
  public boolean hasCredentials() {
    return !injections.isEmpty() || !placeholders.isEmpty();
  }

  /** The hosts with credential rules (the only ones whose TLS the proxy terminates). */
  public Set<String> credentialHosts() {
    Set<String> hosts = new LinkedHashSet<>();
    injections.forEach(i -> hosts.add(i.host()));
    placeholders.forEach(p -> hosts.add(p.host()));
    return Set.copyOf(hosts);
  }

  /** No network at all: every destination is refused (the default of every sandbox). */
  public static NetworkPolicy none() {
    return NONE;
  }

  /**
   * Exactly the given name rules, everything else refused.
   *
   * @throws ConfigException when a rule is invalid
   */
  public static NetworkPolicy allowlist(String... rules) {
    Builder b = builder();
    for (String r : rules) {
      b.allow(r);
    }
    return b.build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder pre-filled with this policy. */
  public Builder toBuilder() {
    Builder b = new Builder();
    rules.forEach(r -> b.rules.add(r.text));
    addresses.forEach(a -> b.addresses.add(a.toString()));
    b.mode = mode;
    b.approvalTimeout = approvalTimeout;
    b.injections.addAll(injections);
    b.placeholders.addAll(placeholders);
    requestRules.forEach((h, l) -> b.requestRules.put(h, new ArrayList<>(l)));
    b.rememberDecisions = rememberDecisions;
    return b;
  }

  /**
   * Which rule allows connecting to {@code host} on {@code port}, if any. {@code host} is a name
   * (normalised like the rules: case, trailing dot, IDN) or an IP literal (IPv6 with or without
   * brackets), which only {@code allowAddress} ranges match. A name that is invalid or looks like a
   * non-canonical IP address ({@code 127.1}, {@code 0x7f000001}) matches nothing.
   */
  /**
   * Why no rule allows {@code host:port} although a wildcard covers its domain (too deep, a DNS
   * resolver, DNS over TLS), for a refusal that says what to change; empty when no wildcard covers
   * it or a rule matches.
   */
  public Optional<String> wildcardRefusal(String host, int port) {
    Optional<String> name = normalizeHost(host);
    if (name.isEmpty() || match(host, port).isPresent()) {
      return Optional.empty();
    }
    for (HostRule r : rules) {
      boolean portOk = r.port == 0 ? DEFAULT_PORTS.contains(port) : r.port == port;
      String why = portOk || port == HostRule.DOT_PORT ? r.wildcardRefusal(name.get(), port) : null;
      if (why != null) {
        return Optional.of(why);
      }
    }
    return Optional.empty();
  }

  public Optional<Match> match(String host, int port) {
    if (port < 1 || port > 65535) {
      return Optional.empty();
    }
    Optional<InetAddress> literal = IpAddresses.parseLiteral(host);
    if (literal.isPresent()) {
      return matchAddress(literal.get());
    }
    Optional<String> name = normalizeHost(host);
    if (name.isEmpty()) {
      return Optional.empty();
    }
    for (HostRule r : rules) {
      if (r.matches(name.get(), port)) {
        return Optional.of(new Match(r.text, false));
      }
    }
    return Optional.empty();
  }

  /** Which {@code allowAddress} range covers the address, if any. */
  public Optional<Match> matchAddress(InetAddress address) {
    for (IpAddresses.Range c : addresses) {
      if (c.contains(address)) {
        return Optional.of(new Match(c.toString(), true));
      }
    }
    return Optional.empty();
  }

  /**
   * The canonical form of a host name as rules compare it: lowercase ASCII (punycode), no trailing
   * dot; empty when it is not a valid DNS name or looks like an IP address.
   */
  public static Optional<String> normalizeHost(String host) {
    try {
      return Optional.of(HostRule.canonicalName(host, false));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** The name rules in canonical form, in the order given. */
  public List<String> rules() {
    return rules.stream().map(r -> r.text).toList();
  }

  /** The {@code allowAddress} ranges in canonical form. */
  public List<String> allowedAddresses() {
    return addresses.stream().map(IpAddresses.Range::toString).toList();
  }

  public Mode onUnknownHost() {
    return mode;
  }

  public Duration approvalTimeout() {
    return approvalTimeout;
  }

  /** Whether no destination can ever be reached (no rules, no addresses, not asking). */
  public boolean isNone() {
    return rules.isEmpty() && addresses.isEmpty() && mode == Mode.DENY;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    if (!(o instanceof NetworkPolicy p)) {
      return false;
    }
    return rules().equals(p.rules())
        && addresses.equals(p.addresses)
        && mode == p.mode
        && approvalTimeout.equals(p.approvalTimeout)
        && injections.equals(p.injections)
        && placeholders.equals(p.placeholders)
        && requestRules.equals(p.requestRules)
        && rememberDecisions == p.rememberDecisions;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        rules(),
        addresses,
        mode,
        approvalTimeout,
        injections,
        placeholders,
        requestRules,
        rememberDecisions);
  }

  @Override
  public String toString() {
    return "NetworkPolicy[allow="
        + rules()
        + ", allowAddress="
        + allowedAddresses()
        + ", onUnknownHost="
        + mode
        + ", approvalTimeout="
        + approvalTimeout
        + (hasCredentials() ? ", credentials=" + credentialHosts() : "")
        + "]";
  }

  /** Builder; {@link #build()} validates every rule. */
  public static final class Builder {
    private final List<String> rules = new ArrayList<>();
    private final List<String> addresses = new ArrayList<>();
    private Mode mode = Mode.DENY;
    private Duration approvalTimeout = DEFAULT_APPROVAL_TIMEOUT;
    private final List<Injection> injections = new ArrayList<>();
    private final List<Placeholder> placeholders = new ArrayList<>();
    private final Map<String, List<RequestRule>> requestRules = new LinkedHashMap<>();
    private boolean rememberDecisions = true;

    private Builder() {}

    /**
     * Limits the requests the proxy forwards to {@code host}, a host with credential rules (the
     * only ones whose requests the proxy sees): a request whose method and path match none of the
     * host's rules gets {@code 403} and is audited ({@code network.request_denied}); it never
     * reaches the host and never carries the credential. Calling it again for a host adds rules.
     */
    public Builder restrict(String host, RequestRule... rules) {
      Objects.requireNonNull(host, "host");
      List<RequestRule> l = requestRules.computeIfAbsent(host, h -> new ArrayList<>());
      for (RequestRule r : rules) {
        l.add(Objects.requireNonNull(r, "rule"));
      }
      return this;
    }

    /**
     * Whether an approval or denial of a host:port in ASK mode holds for the sandbox's life (true,
     * the default) or every new connection asks again (false). A timeout or a failed handler is
     * never remembered.
     */
    public Builder rememberDecisions(boolean remember) {
      this.rememberDecisions = remember;
      return this;
    }

    /**
     * The proxy adds {@code header} to every HTTPS request to {@code host} (an exact name that a
     * rule allows on port 443), replacing a header of that name the sandbox sent. For that host
     * only, the proxy terminates TLS with a CA of the sandbox's own and re-encrypts upstream with
     * full certificate verification; the sandbox never holds the secret.
     */
    public Builder inject(String host, Header header) {
      injections.add(new Injection(host, header));
      return this;
    }

    /**
     * The sandbox's environment variable {@code env} holds an opaque random placeholder instead of
     * {@code secret}; the proxy swaps it for the secret in the headers of HTTPS requests to {@code
     * host} only. Sent to any other host it is not swapped, and is audited as an attempted leak.
     */
    public Builder placeholder(String host, String env, Secret secret) {
      placeholders.add(new Placeholder(host, env, secret));
      return this;
    }

    /**
     * Allows a name ({@code pypi.org}), a wildcard ({@code *.pythonhosted.org}), each optionally
     * with a port ({@code example.com:8443}; default ports 80 and 443).
     */
    public Builder allow(String rule) {
      rules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /** {@link #allow(String)} for each rule. */
    public Builder allow(Collection<String> rules) {
      rules.forEach(this::allow);
      return this;
    }

    /**
     * Explicitly allows an address range ({@code 127.0.0.0/8}, {@code fd00::/8}) or a single
     * address ({@code 10.1.2.3}) that would otherwise be refused as non-public: allowlisted names
     * may resolve into it, and IP-literal targets in it are allowed on any port.
     */
    public Builder allowAddress(String cidr) {
      addresses.add(Objects.requireNonNull(cidr, "cidr"));
      return this;
    }

    /** What happens to destinations no rule allows: {@link Mode#DENY} (default) or ASK. */
    public Builder onUnknownHost(Mode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /** How long to wait for an {@link ApprovalHandler} in ASK mode; no answer denies. */
    public Builder approvalTimeout(Duration timeout) {
      this.approvalTimeout = Objects.requireNonNull(timeout, "timeout");
      return this;
    }

    /**
     * Validates and builds.
     *
     * @throws ConfigException naming the field, the bad value and the fix
     */
    public NetworkPolicy build() {
      List<HostRule> parsed = new ArrayList<>();
      Set<String> seen = new LinkedHashSet<>();
      for (String r : rules) {
        HostRule rule = HostRule.parse(r);
        if (seen.add(rule.text)) {
          parsed.add(rule);
        }
      }
      List<IpAddresses.Range> cidrs = new ArrayList<>();
      for (String a : addresses) {
        IpAddresses.Range c;
        try {
          c = IpAddresses.Range.parse(a);
        } catch (IllegalArgumentException e) {
          throw new ConfigException(
              "network.allowAddress '"
                  + a
                  + "' is invalid: "
                  + e.getMessage()
                  + "; use an address or a CIDR range such as 127.0.0.0/8 or fd00::/8");
        }
        if (!cidrs.contains(c)) {
          cidrs.add(c);
        }
      }
      if (approvalTimeout.isNegative()
          || approvalTimeout.isZero()
          || approvalTimeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new ConfigException(
            "network.approvalTimeout must be between 1 ms and 1 hour, got "
                + approvalTimeout
                + ": e.g. approvalTimeout(Duration.ofSeconds(60))");
      }
      List<Injection> inj = new ArrayList<>();
      Set<String> injected = new LinkedHashSet<>();
      for (Injection i : injections) {
        String host = HostRule.credentialHost(i.host(), parsed, "inject");
        if (!injected.add(host + " " + i.header().name().toLowerCase(Locale.ROOT))) {
          throw new ConfigException(
              "network.credentials: header '"
                  + i.header().name()
                  + "' is injected twice for "
                  + host
                  + ": keep one");
        }
        inj.add(new Injection(host, i.header()));
      }
      List<Placeholder> ph = new ArrayList<>();
      Set<String> envs = new LinkedHashSet<>();
      for (Placeholder p : placeholders) {
        String host = HostRule.credentialHost(p.host(), parsed, "placeholder");
        if (!ENV_NAME.matcher(p.env()).matches()) {
          throw new ConfigException(
              "network.credentials placeholder '"
                  + p.env()
                  + "' is not an environment variable name: use letters, digits and '_', not"
                  + " starting with a digit");
        }
        if (!envs.add(p.env())) {
          throw new ConfigException(
              "network.credentials: placeholder variable "
                  + p.env()
                  + " is given twice: one variable stands for one secret of one host");
        }
        ph.add(new Placeholder(host, p.env(), p.secret()));
      }
      Set<String> credentialHosts = new LinkedHashSet<>();
      inj.forEach(i -> credentialHosts.add(i.host()));
      ph.forEach(p -> credentialHosts.add(p.host()));
      Map<String, List<RequestRule>> restricted = new LinkedHashMap<>();
      for (Map.Entry<String, List<RequestRule>> e : requestRules.entrySet()) {
        String host = HostRule.credentialHost(e.getKey(), parsed, "request rules");
        if (!credentialHosts.contains(host)) {
          throw new ConfigException(
              "network.credentials: request rules for "
                  + host
                  + " apply only to a host with credential rules (the proxy sees the requests of"
                  + " those hosts only): inject a header or a placeholder for "
                  + host
                  + ", or remove its rules");
        }
        if (e.getValue().isEmpty()) {
          throw new ConfigException(
              "network.credentials: restrict(\""
                  + host
                  + "\") names no request rule: give at least one, e.g."
                  + " RequestRule.of(\"/repos/acme/\", \"GET\")");
        }
        List<RequestRule> l = restricted.computeIfAbsent(host, h -> new ArrayList<>());
        for (RequestRule r : e.getValue()) {
          if (!l.contains(r)) {
            l.add(r);
          }
        }
        if (l.size() > MAX_REQUEST_RULES) {
          throw new ConfigException(
              "network.credentials: "
                  + host
                  + " has "
                  + l.size()
                  + " request rules, more than "
                  + MAX_REQUEST_RULES
                  + ": use shorter path prefixes that cover several");
        }
      }
      return new NetworkPolicy(parsed, cidrs, this, inj, ph, restricted);
    }
  }
}
