package io.agentnest.server.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ConfigException;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sizes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * {@code server.yaml}: where the server listens, TLS, body bounds and the server's policy, which
 * every tenant's requests are held to.
 *
 * <pre>{@code
 * listen: {host: 127.0.0.1, port: 8787}
 * tls: {keystore: /etc/agentnest/server.p12, password_env: AGENTNEST_TLS_PASSWORD}
 * max_body: 64m
 * policy:
 *   images: [agentnest/python:latest]
 *   max_memory: 2g
 *   max_cpus: 2
 *   max_ttl: 2h
 *   allow_hosts: [pypi.org, "*.pythonhosted.org"]
 *   runtimes: [runc, runsc]
 *   ask_hosts: ["*.example.org"]     # hosts a sandbox may ask a person about (none by default)
 *   allow_addresses: [10.20.0.0/16]  # non-public ranges those names may resolve to (none)
 *   approvals:                       # every sandbox has at least these (none by default)
 *     base: recommended
 *     shell: {'\bterraform\s+apply\b': ask}
 *   max_pids: 1024                   # pidsLimit a request may ask for at most (default 1024)
 *   max_snapshots: 20                # snapshots a tenant may keep (E2B pauses too; default 20)
 *   max_snapshot_bytes: 10g          # their total size per tenant (default 10g)
 *   approver_role_required: true     # only approver keys answer approvals (default false)
 * audit:
 *   sinks: [{type: syslog, transport: tls, host: logs.example.org, port: 6514}]
 * metrics: {token_env: AGENTNEST_METRICS_TOKEN}   # GET /metrics for a scraper (default: off)
 * store:                             # shared by several servers (default: SQLite, one machine)
 *   postgres: {url: "jdbc:postgresql://db.example.org/agentnest", user: agentnest,
 *              password_env: AGENTNEST_DB_PASSWORD}
 * }</pre>
 */
public record ServerConfig(
    String host,
    int port,
    @Nullable Tls tls,
    boolean insecureBehindProxy,
    long maxBodyBytes,
    long maxJsonBytes,
    Policy policy,
    AuditShippingConfig audit,
    StoreConfig store,
    Metrics metrics) {

  /** The port {@code agentnest serve} listens on by default. */
  public static final int DEFAULT_PORT = 8787;

  /**
   * {@code GET /metrics}: on when {@code token_env} names the environment variable that holds the
   * token a scraper sends as {@code Authorization: Bearer <token>}; off (404) without one.
   */
  public record Metrics(@Nullable String tokenEnv) {
    public static final Metrics OFF = new Metrics(null);

    public boolean enabled() {
      return tokenEnv != null;
    }
  }

  /** A key store (PKCS12 or JKS) and the environment variable that holds its password. */
  public record Tls(Path keystore, String passwordEnv, String type) {}

  /**
   * What any sandbox on this server may be: the images it may run, per-sandbox caps, the egress
   * hosts a request may ask for (none by default), the hosts a sandbox created with {@code
   * askUnknownHosts} may ask a person about at run time ({@code ask_hosts}: names and wildcards as
   * in {@code allow_hosts}, or {@code "*"} for any; none by default, so no question reaches a
   * person unless the operator says so), and the non-public address ranges allowed or approved
   * names may resolve to ({@code allow_addresses}; none by default: an internal service is reached
   * only when the operator names its range), and the approval rules every sandbox has at least
   * ({@code approvals}: none by default; a tenant's floor and a request's rules add to them), the
   * highest {@code pidsLimit} a request may ask for ({@code max_pids}) and the snapshots a tenant
   * may keep ({@code max_snapshots}, {@code max_snapshot_bytes}: every tenant's default quota), and
   * whether only approver keys answer approval questions ({@code approver_role_required}: off by
   * default, so a tenant's agent keys answer too, as before roles existed). A tenant's own policy
   * only narrows these.
   */
  public record Policy(
      String defaultImage,
      List<String> images,
      long maxMemoryBytes,
      double maxCpus,
      Duration defaultTtl,
      Duration maxTtl,
      List<String> allowHosts,
      List<String> runtimes,
      List<String> askHosts,
      List<String> allowAddresses,
      ApprovalPolicy approvals,
      long maxPids,
      int maxSnapshots,
      long maxSnapshotBytes,
      boolean approverRoleRequired) {
    /** The runtimes a tenant may ask for when the server's policy names none. */
    public static final List<String> DEFAULT_RUNTIMES = List.of("runc", "runsc");

    /** {@code max_pids} by default: four times a sandbox's own default of 256. */
    public static final long DEFAULT_MAX_PIDS = 1024;

    /** {@code max_snapshots} by default, per tenant. */
    public static final int DEFAULT_MAX_SNAPSHOTS = 20;

    /** {@code max_snapshot_bytes} by default, per tenant: 10 GiB. */
    public static final long DEFAULT_MAX_SNAPSHOT_BYTES = 10L << 30;

    /** A policy with the default pids and snapshot caps. */
    public Policy(
        String defaultImage,
        List<String> images,
        long maxMemoryBytes,
        double maxCpus,
        Duration defaultTtl,
        Duration maxTtl,
        List<String> allowHosts,
        List<String> runtimes,
        List<String> askHosts,
        List<String> allowAddresses,
        ApprovalPolicy approvals) {
      this(
          defaultImage,
          images,
          maxMemoryBytes,
          maxCpus,
          defaultTtl,
          maxTtl,
          allowHosts,
          runtimes,
          askHosts,
          allowAddresses,
          approvals,
          DEFAULT_MAX_PIDS,
          DEFAULT_MAX_SNAPSHOTS,
          DEFAULT_MAX_SNAPSHOT_BYTES);
    }

    /** A policy whose tenants' agent keys answer approvals too. */
    public Policy(
        String defaultImage,
        List<String> images,
        long maxMemoryBytes,
        double maxCpus,
        Duration defaultTtl,
        Duration maxTtl,
        List<String> allowHosts,
        List<String> runtimes,
        List<String> askHosts,
        List<String> allowAddresses,
        ApprovalPolicy approvals,
        long maxPids,
        int maxSnapshots,
        long maxSnapshotBytes) {
      this(
          defaultImage,
          images,
          maxMemoryBytes,
          maxCpus,
          defaultTtl,
          maxTtl,
          allowHosts,
          runtimes,
          askHosts,
          allowAddresses,
          approvals,
          maxPids,
          maxSnapshots,
          maxSnapshotBytes,
          false);
    }

    public Policy {
      images = List.copyOf(images);
      allowHosts = List.copyOf(allowHosts);
      runtimes = List.copyOf(runtimes);
      askHosts = List.copyOf(askHosts);
      allowAddresses = List.copyOf(allowAddresses);
    }

    /** The same policy without ask or address allowances: what a server had before them. */
    public Policy(
        String defaultImage,
        List<String> images,
        long maxMemoryBytes,
        double maxCpus,
        Duration defaultTtl,
        Duration maxTtl,
        List<String> allowHosts) {
      this(
          defaultImage,
          images,
          maxMemoryBytes,
          maxCpus,
          defaultTtl,
          maxTtl,
          allowHosts,
          DEFAULT_RUNTIMES,
          List.of(),
          List.of(),
          ApprovalPolicy.none());
    }

    public static Policy defaults() {
      return new Policy(
          "agentnest/python:latest",
          List.of("agentnest/python:latest"),
          2L << 30,
          2,
          Duration.ofMinutes(30),
          Duration.ofHours(4),
          List.of());
    }
  }

  public static ServerConfig defaults() {
    return new ServerConfig(
        "127.0.0.1",
        DEFAULT_PORT,
        null,
        false,
        64L << 20,
        1L << 20,
        Policy.defaults(),
        AuditShippingConfig.none(),
        StoreConfig.sqlite(),
        Metrics.OFF);
  }

  /** The same configuration on another host and port (the CLI's {@code --listen}). */
  public ServerConfig withListen(String newHost, int newPort) {
    return new ServerConfig(
        newHost,
        newPort,
        tls,
        insecureBehindProxy,
        maxBodyBytes,
        maxJsonBytes,
        policy,
        audit,
        store,
        metrics);
  }

  public ServerConfig withInsecureBehindProxy(boolean on) {
    return new ServerConfig(
        host, port, tls, on, maxBodyBytes, maxJsonBytes, policy, audit, store, metrics);
  }

  public ServerConfig withPolicy(Policy p) {
    return new ServerConfig(
        host, port, tls, insecureBehindProxy, maxBodyBytes, maxJsonBytes, p, audit, store, metrics);
  }

  /** The same configuration with its shared state in {@code s}. */
  public ServerConfig withStore(StoreConfig s) {
    return new ServerConfig(
        host,
        port,
        tls,
        insecureBehindProxy,
        maxBodyBytes,
        maxJsonBytes,
        policy,
        audit,
        s,
        metrics);
  }

  // The YAML shape, kept apart from the record so that sizes and durations are written as people
  // write them ("2g", "30m") and every unknown key is an error with its line and column.
  private record FileShape(
      @Nullable Listen listen,
      @Nullable TlsShape tls,
      @JsonProperty("insecure_behind_proxy") @Nullable Boolean insecureBehindProxy,
      @JsonProperty("max_body") @Nullable String maxBody,
      @JsonProperty("max_json") @Nullable String maxJson,
      @Nullable PolicyShape policy,
      AuditShippingConfig.@Nullable Shape audit,
      StoreConfig.@Nullable Shape store,
      @Nullable MetricsShape metrics) {}

  private record MetricsShape(@JsonProperty("token_env") @Nullable String tokenEnv) {}

  private record Listen(@Nullable String host, @Nullable Integer port) {}

  private record TlsShape(
      @Nullable String keystore,
      @JsonProperty("password_env") @Nullable String passwordEnv,
      @Nullable String type) {}

  private record PolicyShape(
      @JsonProperty("default_image") @Nullable String defaultImage,
      @Nullable List<String> images,
      @JsonProperty("max_memory") @Nullable String maxMemory,
      @JsonProperty("max_cpus") @Nullable Double maxCpus,
      @JsonProperty("default_ttl") @Nullable String defaultTtl,
      @JsonProperty("max_ttl") @Nullable String maxTtl,
      @JsonProperty("allow_hosts") @Nullable List<String> allowHosts,
      @Nullable List<String> runtimes,
      @JsonProperty("ask_hosts") @Nullable List<String> askHosts,
      @JsonProperty("allow_addresses") @Nullable List<String> allowAddresses,
      @Nullable JsonNode approvals,
      @JsonProperty("max_pids") @Nullable Long maxPids,
      @JsonProperty("max_snapshots") @Nullable Integer maxSnapshots,
      @JsonProperty("max_snapshot_bytes") @Nullable String maxSnapshotBytes,
      @JsonProperty("approver_role_required") @Nullable Boolean approverRoleRequired) {}

  /** Reads {@code file}; errors name the file, line and column and the fix. */
  public static ServerConfig load(Path file) {
    String text;
    try {
      text = Files.readString(file);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read server config " + file + ": " + e.getMessage(), e);
    }
    return parse(text, file.toString());
  }

  public static ServerConfig parse(String yaml, String source) {
    ObjectMapper mapper =
        new ObjectMapper(new YAMLFactory())
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
    FileShape f;
    try {
      f = yaml.isBlank() ? null : mapper.readValue(yaml, FileShape.class);
    } catch (UnrecognizedPropertyException e) {
      throw new IllegalArgumentException(
          keyWhere(source, yaml, String.valueOf(e.getPropertyName()))
              + ": unknown key '"
              + e.getPropertyName()
              + "': known keys here are "
              + e.getKnownPropertyIds(),
          e);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          where(source, e.getLocation()) + ": " + e.getOriginalMessage(), e);
    }
    ServerConfig d = defaults();
    if (f == null) {
      return d;
    }
    String host = d.host();
    int port = d.port();
    if (f.listen() != null) {
      host = f.listen().host() == null ? host : f.listen().host();
      port = f.listen().port() == null ? port : f.listen().port();
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException(
          source + ": listen.port " + port + " is out of range: use 1-65535 (0 picks a free one)");
    }
    Tls tls = null;
    if (f.tls() != null) {
      if (f.tls().keystore() == null || f.tls().passwordEnv() == null) {
        throw new IllegalArgumentException(
            source
                + ": tls needs keystore and password_env, e.g. tls: {keystore: server.p12,"
                + " password_env: AGENTNEST_TLS_PASSWORD}");
      }
      tls =
          new Tls(
              Path.of(f.tls().keystore()),
              f.tls().passwordEnv(),
              f.tls().type() == null ? "PKCS12" : f.tls().type());
    }
    Policy p = d.policy();
    PolicyShape ps = f.policy();
    if (ps != null) {
      List<String> images = ps.images() == null ? p.images() : ps.images();
      String defaultImage =
          ps.defaultImage() != null ? ps.defaultImage() : images.isEmpty() ? "" : images.get(0);
      if (!images.contains(defaultImage)) {
        throw new IllegalArgumentException(
            source
                + ": policy.default_image '"
                + defaultImage
                + "' is not in policy.images "
                + images
                + ": add it there");
      }
      p =
          new Policy(
              defaultImage,
              images,
              ps.maxMemory() == null
                  ? p.maxMemoryBytes()
                  : Sizes.parse("policy.max_memory", ps.maxMemory()),
              ps.maxCpus() == null ? p.maxCpus() : ps.maxCpus(),
              ps.defaultTtl() == null
                  ? p.defaultTtl()
                  : duration("policy.default_ttl", ps.defaultTtl()),
              ps.maxTtl() == null ? p.maxTtl() : duration("policy.max_ttl", ps.maxTtl()),
              ps.allowHosts() == null ? p.allowHosts() : ps.allowHosts(),
              ps.runtimes() == null ? p.runtimes() : ps.runtimes(),
              ps.askHosts() == null ? p.askHosts() : ps.askHosts(),
              ps.allowAddresses() == null ? p.allowAddresses() : ps.allowAddresses(),
              ps.approvals() == null
                  ? p.approvals()
                  : ApprovalRules.fromConfig(ps.approvals(), source),
              ps.maxPids() == null
                  ? p.maxPids()
                  : atLeast(source, "policy.max_pids", 8, ps.maxPids()),
              ps.maxSnapshots() == null
                  ? p.maxSnapshots()
                  : (int) atLeast(source, "policy.max_snapshots", 0, ps.maxSnapshots()),
              ps.maxSnapshotBytes() == null
                  ? p.maxSnapshotBytes()
                  : Sizes.parse("policy.max_snapshot_bytes", ps.maxSnapshotBytes()),
              ps.approverRoleRequired() == null
                  ? p.approverRoleRequired()
                  : ps.approverRoleRequired());
      checkNetwork(source, p);
    }
    return new ServerConfig(
        host,
        port,
        tls,
        Boolean.TRUE.equals(f.insecureBehindProxy()),
        f.maxBody() == null ? d.maxBodyBytes() : Sizes.parse("max_body", f.maxBody()),
        f.maxJson() == null ? d.maxJsonBytes() : Sizes.parse("max_json", f.maxJson()),
        p,
        AuditShippingConfig.parse(f.audit(), source),
        StoreConfig.parse(f.store(), key -> keyBelow(source, yaml, "store", key)),
        metrics(source, f.metrics()));
  }

  private static Metrics metrics(String source, @Nullable MetricsShape m) {
    if (m == null) {
      return Metrics.OFF;
    }
    if (m.tokenEnv() == null || !m.tokenEnv().matches("[A-Za-z_][A-Za-z0-9_]*")) {
      throw new IllegalArgumentException(
          source
              + ": metrics needs token_env, the environment variable with the scrape token, e.g."
              + " metrics: {token_env: AGENTNEST_METRICS_TOKEN}");
    }
    return new Metrics(m.tokenEnv());
  }

  private static long atLeast(String source, String field, long least, long value) {
    if (value < least) {
      throw new IllegalArgumentException(
          source + ": " + field + " is " + value + ": use at least " + least);
    }
    return value;
  }

  /** Refuses ask patterns and address ranges the sandbox's network policy would refuse later. */
  private static void checkNetwork(String source, Policy p) {
    for (String h : p.askHosts()) {
      if (!h.equals("*")
          && NetworkPolicy.normalizeHost(h.startsWith("*.") ? h.substring(2) : h).isEmpty()) {
        throw new IllegalArgumentException(
            source
                + ": policy.ask_hosts '"
                + h
                + "' is not a host name or wildcard: write e.g. example.org, \"*.example.org\" or"
                + " \"*\" (any host)");
      }
    }
    try {
      NetworkPolicy.Builder b = NetworkPolicy.builder();
      p.allowAddresses().forEach(b::allowAddress);
      b.build();
    } catch (ConfigException e) {
      throw new IllegalArgumentException(
          source
              + ": policy.allow_addresses: "
              + String.valueOf(e.getMessage()).replace("network.allowAddress", "the range"),
          e);
    }
  }

  private static final Pattern DURATION = Pattern.compile("([0-9]{1,9})([smhd])");

  /** {@code 90s}, {@code 30m}, {@code 2h}, {@code 1d}. */
  public static Duration duration(String field, String text) {
    Matcher m = DURATION.matcher(text.strip().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          field + " '" + text + "' is not a duration: write e.g. 90s, 30m, 2h or 1d");
    }
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
  }

  // Records are read through a buffer, so Jackson's location is past the whole mapping; the key's
  // own line is found in the text instead.
  private static String keyWhere(String source, String yaml, String key) {
    Pattern p = Pattern.compile("^(\\s*)(- )?" + Pattern.quote(key) + "\\s*:");
    String[] lines = yaml.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      Matcher m = p.matcher(lines[i]);
      if (m.find()) {
        return source + ":" + (i + 1) + ":" + (m.end(1) + 1);
      }
    }
    return source;
  }

  // The first {@code key} at or after the top-level {@code block}, in block or flow style.
  private static String keyBelow(String source, String yaml, String block, String key) {
    String[] lines = yaml.split("\n", -1);
    Pattern top = Pattern.compile("^" + Pattern.quote(block) + "\\s*:");
    Pattern inner = Pattern.compile("(?<![A-Za-z0-9_])" + Pattern.quote(key) + "\\s*:");
    boolean inBlock = false;
    for (int i = 0; i < lines.length; i++) {
      if (!inBlock && !top.matcher(lines[i]).find()) {
        continue;
      }
      inBlock = true;
      Matcher m = inner.matcher(lines[i]);
      if (m.find()) {
        return source + ":" + (i + 1) + ":" + (m.start() + 1);
      }
    }
    return source;
  }

  private static String where(String source, @Nullable JsonLocation loc) {
    return loc == null ? source : source + ":" + loc.getLineNr() + ":" + loc.getColumnNr();
  }
}
