package io.agentnest.config;

import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.ConfigException;
import io.agentnest.NetworkPolicy;
import io.agentnest.NetworkPolicy.Mode;
import io.agentnest.RemoteServer;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.Secret;
import io.agentnest.Sizes;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Schema version 1 of a settings section ({@code defaults:} or a profile): every key, its type, an
 * example, how it maps onto {@link SandboxConfig.Builder} and back, and its environment variable.
 * Groups ({@code limits}, {@code budgets}, {@code security}, {@code network}) are the dotted
 * prefixes.
 *
 * <p>Why it is over 600 lines: it is a table, one entry per key, and reads as data.
 */
final class Schema {
  /** The config file versions this code reads. */
  static final List<Integer> VERSIONS = List.of(1);

  static final String ENV_PREFIX = "AGENTNEST_";

  private static final Pattern SIZE =
      Pattern.compile("\\s*[0-9]+(\\.[0-9]+)?\\s*[kmgtKMGT]?([iI]?[bB])?\\s*");
  private static final Pattern NUMBER =
      Pattern.compile("\\s*[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*");
  private static final Pattern INTEGER = Pattern.compile("\\s*[-+]?[0-9]{1,18}\\s*");

  /** Value types. */
  enum Kind {
    STRING("a string"),
    SIZE("a size (a number with k, m, g or t)"),
    DURATION("a duration (a number with ms, s, m, h or d)"),
    NUMBER("a number"),
    INTEGER("an integer"),
    BOOLEAN("a boolean (true or false)"),
    STRING_MAP("a map of names to strings"),
    FILE("a file path"),
    CHOICE("one of the supported values"),
    CREDENTIALS("a list of credential rules");

    final String description;

    Kind(String description) {
      this.description = description;
    }
  }

  /** Puts one entry of a map-valued key into the builder. */
  interface EntryApplier {
    void put(SandboxConfig.Builder builder, String key, String value);
  }

  /** A seccomp profile file, read at load time. */
  record FileValue(String path, String content) {}

  /** One leaf key of a settings section. */
  static final class Field {
    final String path;
    final String key;
    final String group;
    final Kind kind;
    final String example;
    final List<String> choices;
    final String help;
    final @Nullable BiConsumer<SandboxConfig.Builder, Object> apply;
    final @Nullable EntryApplier putEntry;
    final @Nullable Function<SandboxConfig, @Nullable Object> read;

    private Field(
        String path,
        Kind kind,
        String example,
        List<String> choices,
        String help,
        @Nullable BiConsumer<SandboxConfig.Builder, Object> apply,
        @Nullable EntryApplier putEntry,
        @Nullable Function<SandboxConfig, @Nullable Object> read) {
      this.path = path;
      int dot = path.lastIndexOf('.');
      this.key = path.substring(dot + 1);
      this.group = dot < 0 ? "" : path.substring(0, dot);
      this.kind = kind;
      this.example = example;
      this.choices = choices;
      this.help = help;
      this.apply = apply;
      this.putEntry = putEntry;
      this.read = read;
    }

    /**
     * {@code AGENTNEST_} + the path joined with '_', upper-cased; null for keys without one (maps
     * and files).
     */
    @Nullable String envName() {
      if (kind == Kind.STRING_MAP || kind == Kind.FILE || kind == Kind.CREDENTIALS) {
        return null;
      }
      return ENV_PREFIX + path.replace('.', '_').toUpperCase(Locale.ROOT);
    }

    @Override
    public String toString() {
      return path;
    }
  }

  private static final List<String> ACTIONS = List.of("allow", "ask", "deny");

  static final List<Field> FIELDS =
      withLimits(
          List.of(
              scalar(
                  "backend",
                  Kind.STRING,
                  "docker",
                  (b, v) -> b.backend((String) v),
                  c -> c.backend()),
              scalar(
                  "image",
                  Kind.STRING,
                  "agentnest/python:latest",
                  (b, v) -> b.image((String) v),
                  c -> c.image()),
              scalar(
                  "runtime",
                  Kind.STRING,
                  "gvisor",
                  (b, v) -> b.runtime((String) v),
                  c -> c.runtime()),
              scalar(
                  "user",
                  Kind.STRING,
                  "\"65534:65534\"",
                  (b, v) -> b.user((String) v),
                  c -> c.user()),
              scalar(
                  "workdir",
                  Kind.STRING,
                  "/workspace",
                  (b, v) -> b.workdir((String) v),
                  c -> c.workdir()),
              map("env", "{MODE: test}", (b, k, v) -> b.env(k, v), c -> c.env()),
              map("labels", "{team: search}", (b, k, v) -> b.label(k, v), c -> c.labels()),
              scalar(
                  "limits.cpus", Kind.NUMBER, "1.5", (b, v) -> b.cpus((Double) v), c -> c.cpus()),
              scalar(
                  "limits.memory",
                  Kind.SIZE,
                  "512m",
                  (b, v) -> b.memoryBytes((Long) v),
                  c -> c.memoryBytes()),
              scalar(
                  "limits.gpus",
                  Kind.INTEGER,
                  "1", // Out of int range clamps to a value build() refuses with its own message.
                  (b, v) -> b.gpus((int) Math.max(-1, Math.min(65, (Long) v))),
                  c -> c.gpus()),
              scalar(
                  "limits.exec_timeout",
                  Kind.DURATION,
                  "60s",
                  (b, v) -> b.execTimeout((Duration) v),
                  c -> c.execTimeout()),
              scalar(
                  "limits.max_output",
                  Kind.SIZE,
                  "10m",
                  (b, v) -> b.maxOutputBytes((Long) v),
                  c -> c.maxOutputBytes()),
              scalar(
                  "limits.ttl", Kind.DURATION, "30m", (b, v) -> b.ttl((Duration) v), c -> c.ttl()),
              scalar(
                  "limits.start_timeout",
                  Kind.DURATION,
                  "30s",
                  (b, v) -> b.startTimeout((Duration) v),
                  c -> c.startTimeout()),
              scalar(
                  "budgets.tunnels_per_second",
                  Kind.NUMBER,
                  "20",
                  (b, v) -> b.budgets(b.currentBudgets().withTunnelsPerSecond((Double) v)),
                  c -> c.budgets().tunnelsPerSecond()),
              scalar(
                  "budgets.tunnel_burst",
                  Kind.INTEGER,
                  "200",
                  (b, v) -> b.budgets(b.currentBudgets().withTunnelBurst(toInt("tunnel_burst", v))),
                  c -> c.budgets().tunnelBurst()),
              scalar(
                  "budgets.asks_per_second",
                  Kind.NUMBER,
                  "5",
                  (b, v) -> b.budgets(b.currentBudgets().withAsksPerSecond((Double) v)),
                  c -> c.budgets().asksPerSecond()),
              scalar(
                  "budgets.ask_burst",
                  Kind.INTEGER,
                  "50",
                  (b, v) -> b.budgets(b.currentBudgets().withAskBurst(toInt("ask_burst", v))),
                  c -> c.budgets().askBurst()),
              scalar(
                  "budgets.asks_per_call",
                  Kind.INTEGER,
                  "256",
                  (b, v) ->
                      b.budgets(b.currentBudgets().withAsksPerCall(toInt("asks_per_call", v))),
                  c -> c.budgets().asksPerCall()),
              scalar(
                  "budgets.destroy_after_refusals",
                  Kind.INTEGER,
                  "1000",
                  (b, v) ->
                      b.budgets(
                          b.currentBudgets()
                              .withDestroyAfterRefusals(toInt("destroy_after_refusals", v))),
                  c -> c.budgets().destroyAfterRefusals()),
              scalar(
                  "security.read_only_root",
                  Kind.BOOLEAN,
                  "true",
                  (b, v) -> b.readOnlyRootFilesystem((Boolean) v),
                  c -> c.readOnlyRootFilesystem()),
              scalar(
                  "security.read_only_workspace",
                  Kind.BOOLEAN,
                  "false",
                  (b, v) -> b.readOnlyWorkspace((Boolean) v),
                  c -> c.readOnlyWorkspace()),
              new Field(
                  "security.seccomp_profile",
                  Kind.FILE,
                  "./seccomp.json",
                  List.of(),
                  "",
                  (b, v) -> b.seccompProfile(((FileValue) v).content()),
                  null,
                  null),
              new Field(
                  "network.mode",
                  Kind.CHOICE,
                  "none",
                  List.of("none", "allowlist"),
                  "none: no network at all; allowlist: only network.allow, through the host's proxy",
                  (b, v) -> {
                    if ("none".equals(v)) {
                      b.network(NetworkPolicy.none());
                    }
                  },
                  null,
                  null),
              scalar(
                  "network.allow",
                  Kind.STRING,
                  "\"pypi.org, *.pythonhosted.org, api.example.com:8443\"",
                  (b, v) -> b.network(withList(b.currentNetwork(), (String) v, false)),
                  c -> String.join(", ", c.network().rules())),
              scalar(
                  "network.allow_addresses",
                  Kind.STRING,
                  "\"10.0.0.0/8\"",
                  (b, v) -> b.network(withList(b.currentNetwork(), (String) v, true)),
                  c -> String.join(", ", c.network().allowedAddresses())),
              new Field(
                  "network.on_unknown_host",
                  Kind.CHOICE,
                  "deny",
                  List.of("deny", "ask"),
                  "ask: a host not on the allowlist waits for an approval; a timeout denies",
                  (b, v) ->
                      b.network(
                          b.currentNetwork().toBuilder()
                              .onUnknownHost("ask".equals(v) ? Mode.ASK : Mode.DENY)
                              .build()),
                  null,
                  null),
              new Field(
                  "network.credentials",
                  Kind.CREDENTIALS,
                  Credentials.EXAMPLE,
                  List.of(),
                  "",
                  (b, v) -> ((Credentials.Credential) v).applyTo(b),
                  null,
                  c -> Credentials.describe(c.network())),
              scalar(
                  "network.remember_decisions",
                  Kind.BOOLEAN,
                  "true",
                  (b, v) ->
                      b.network(
                          b.currentNetwork().toBuilder().rememberDecisions((Boolean) v).build()),
                  c -> c.network().remembersDecisions()),
              scalar(
                  "network.approval_timeout",
                  Kind.DURATION,
                  "60s",
                  (b, v) ->
                      b.network(
                          b.currentNetwork().toBuilder().approvalTimeout((Duration) v).build()),
                  c -> c.network().approvalTimeout()),
              new Field(
                  "approvals.file_delete",
                  Kind.CHOICE,
                  "ask",
                  ACTIONS,
                  "deleting files: allow, ask (wait for the approval handler) or deny",
                  (b, v) ->
                      b.approvals(b.currentApprovals().toBuilder().fileDeletion(action(v)).build()),
                  null,
                  c -> c.approvals().fileDeletion().name().toLowerCase(Locale.ROOT)),
              new Field(
                  "approvals.system_modify",
                  Kind.CHOICE,
                  "ask",
                  ACTIONS,
                  "writes outside approvals.writable_paths, chmod/chown, package installation",
                  (b, v) ->
                      b.approvals(
                          b.currentApprovals().toBuilder().systemModification(action(v)).build()),
                  null,
                  c -> c.approvals().systemModification().name().toLowerCase(Locale.ROOT)),
              map(
                  "approvals.shell",
                  "{'\\bgit\\s+push\\b': ask, 'curl .*[|] *sh': deny}",
                  (b, k, v) ->
                      b.approvals(
                          b.currentApprovals().toBuilder().shell(k, actionOf(k, v)).build()),
                  c -> {
                    Map<String, String> m = new LinkedHashMap<>();
                    c.approvals()
                        .shellRules()
                        .forEach(
                            r ->
                                m.put(
                                    r.pattern().pattern(),
                                    r.action().name().toLowerCase(Locale.ROOT)));
                    return m;
                  }),
              map(
                  "approvals.python",
                  "{socket.connect: ask, subprocess.Popen: deny}",
                  (b, k, v) ->
                      b.approvals(
                          b.currentApprovals().toBuilder().python(k, actionOf(k, v)).build()),
                  c -> {
                    Map<String, String> m = new LinkedHashMap<>();
                    c.approvals()
                        .pythonRules()
                        .forEach((k, a) -> m.put(k, a.name().toLowerCase(Locale.ROOT)));
                    return m;
                  }),
              scalar(
                  "approvals.writable_paths",
                  Kind.STRING,
                  "\"/workspace, /tmp\"",
                  (b, v) ->
                      b.approvals(
                          b.currentApprovals().toBuilder()
                              .writablePaths(
                                  Arrays.stream(((String) v).split(","))
                                      .map(String::strip)
                                      .filter(x -> !x.isEmpty())
                                      .toList())
                              .build()),
                  c -> String.join(", ", c.approvals().writablePaths())),
              scalar(
                  "approvals.timeout",
                  Kind.DURATION,
                  "60s",
                  (b, v) ->
                      b.approvals(b.currentApprovals().toBuilder().timeout((Duration) v).build()),
                  c -> c.approvals().timeout()),
              // The warm pool (SandboxPool), read through AgentNestConfig.pool(): not part of the
              // sandbox's own configuration, so each key is only checked here.
              side("pool.name", Kind.STRING, "default", (b, v) -> poolName((String) v)),
              side("pool.min_idle", Kind.INTEGER, "2", (b, v) -> poolCount("min_idle", v, 0, 1000)),
              side("pool.max_idle", Kind.INTEGER, "4", (b, v) -> poolCount("max_idle", v, 0, 1000)),
              side(
                  "pool.max_total",
                  Kind.INTEGER,
                  "16",
                  (b, v) -> poolCount("max_total", v, 1, 10000)),
              side("pool.max_uses", Kind.INTEGER, "1", (b, v) -> poolCount("max_uses", v, 1, 1)),
              side("pool.idle_ttl", Kind.DURATION, "30m", (b, v) -> {}),
              side(
                  "pool.refill_concurrency",
                  Kind.INTEGER,
                  "1",
                  (b, v) -> poolCount("refill_concurrency", v, 1, 32)),
              new Field(
                  "pool.on_exhausted",
                  Kind.CHOICE,
                  "wait",
                  List.of("wait", "fail"),
                  "when max_total are out: wait up to max_wait for one, or fail at once",
                  (b, v) -> {},
                  null,
                  null),
              side("pool.max_wait", Kind.DURATION, "30s", (b, v) -> {}),
              // An agentnest serve server: its URL here, its key never (AGENTNEST_API_KEY).
              new Field(
                  "remote.url",
                  Kind.STRING,
                  "https://sandbox.internal:8787",
                  List.of(),
                  "an agentnest serve server; the tenant's key comes from AGENTNEST_API_KEY",
                  Schema::remote,
                  null,
                  c -> {
                    RemoteServer r = c.remote();
                    return r == null ? null : r.url().toString();
                  }),
              // The Kubernetes backend's block: read by it through AgentNestConfig.kubernetes();
              // tenant and runtime_class also set the sandbox's own fields.
              kube("kubernetes.context", Kind.STRING, "prod", (b, v) -> nonBlank("context", v)),
              kube(
                  "kubernetes.namespace_prefix",
                  Kind.STRING,
                  "agentnest-",
                  (b, v) -> namespacePrefix((String) v)),
              kube("kubernetes.runtime_class", Kind.STRING, "gvisor", Schema::runtimeClass),
              kube(
                  "kubernetes.api",
                  Kind.STRING,
                  "agent-sandbox",
                  (b, v) -> KubernetesOptions.requireApi("kubernetes.api", (String) v)),
              scalar(
                  "kubernetes.tenant",
                  Kind.STRING,
                  "search",
                  (b, v) -> b.tenant((String) v),
                  c -> c.tenant()),
              kube("kubernetes.quota.pods", Kind.INTEGER, "50", (b, v) -> podQuota((Long) v)),
              kube(
                  "kubernetes.quota.cpu",
                  Kind.STRING,
                  "\"16\"",
                  (b, v) -> quantity("cpu", v, "16")),
              kube(
                  "kubernetes.quota.memory",
                  Kind.STRING,
                  "64Gi",
                  (b, v) -> quantity("memory", v, "64Gi")),
              // The same pool as pool: (template is its name), as issue 19's YAML writes it.
              kube(
                  "kubernetes.pool.template",
                  Kind.STRING,
                  "default",
                  (b, v) -> poolName((String) v)),
              kube(
                  "kubernetes.pool.min_idle",
                  Kind.INTEGER,
                  "4",
                  (b, v) -> poolCount("min_idle", v, 0, 1000))));

  /**
   * {@code fields} with a {@code limits.<key>} entry for each {@link SandboxLimit} after {@code
   * limits.memory}: the limits' names and forms come from their table, not from here.
   */
  private static List<Field> withLimits(List<Field> fields) {
    List<Field> out = new ArrayList<>();
    for (Field f : fields) {
      out.add(f);
      if (f.path.equals("limits.memory")) {
        for (SandboxLimit l : SandboxLimit.values()) {
          out.add(
              scalar(
                  "limits." + l.key(),
                  l.unit() == SandboxLimit.Unit.BYTES ? Kind.SIZE : Kind.INTEGER,
                  l.format(l.byDefault()),
                  (b, v) -> b.limit(l, (Long) v),
                  c -> c.limit(l)));
        }
      }
    }
    return List.copyOf(out);
  }

  /** A Kubernetes resource quantity as a quota takes it: 16, 500m, 1.5, 64Gi, 512Mi, 1G. */
  private static final Pattern QUANTITY =
      Pattern.compile("[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?");

  /** A namespace prefix plus a tenant must stay a DNS-1123 label. */
  private static final Pattern NAMESPACE_PREFIX = Pattern.compile("[a-z0-9][-a-z0-9]{0,39}");

  /** The Kubernetes fields, in schema order. */
  static List<Field> kubernetesFields() {
    return FIELDS.stream().filter(f -> f.path.startsWith("kubernetes.")).toList();
  }

  private static String nonBlank(String key, Object v) {
    String s = ((String) v).strip();
    if (s.isEmpty()) {
      throw new ConfigException(key + " is empty: leave the key out for the default");
    }
    return s;
  }

  /**
   * On Kubernetes the RuntimeClass is the sandbox's runtime and wins over {@code runtime:} (which a
   * Docker section may set); on another backend only the Kubernetes backend would read it.
   */
  private static void runtimeClass(SandboxConfig.Builder b, Object v) {
    String name = nonBlank("runtime_class", v);
    if (b.build().backend().equals("kubernetes")) {
      b.runtime(name);
    }
  }

  private static void remote(SandboxConfig.Builder b, Object v) {
    String url = nonBlank("remote.url", v);
    String key = System.getenv(RemoteServer.ENV_API_KEY);
    if (key == null || key.isBlank()) {
      throw new ConfigException(
          "remote.url names a server but "
              + RemoteServer.ENV_API_KEY
              + " is not set: export the tenant's API key (`agentnest tenant add` prints one);"
              + " a key is never written in the configuration file");
    }
    URI uri;
    try {
      uri = URI.create(url.strip());
    } catch (IllegalArgumentException e) {
      throw new ConfigException("remote.url '" + url + "' is not a URL: " + e.getMessage());
    }
    b.remote(new RemoteServer(uri, Secret.of(key.strip()))).backend("remote");
  }

  private static void namespacePrefix(String v) {
    if (!NAMESPACE_PREFIX.matcher(v).matches()) {
      throw new ConfigException(
          "'"
              + v
              + "' cannot start a namespace name: use lower-case letters, digits and '-',"
              + " starting with a letter or digit, at most 40, e.g. agentnest-");
    }
  }

  private static void podQuota(long pods) {
    if (pods < 1 || pods > 100_000) {
      throw new ConfigException(
          "a quota of " + pods + " pods is out of range: give 1 to 100000, e.g. 50");
    }
  }

  private static void quantity(String key, Object v, String example) {
    String s = ((String) v).strip();
    if (!QUANTITY.matcher(s).matches()) {
      throw new ConfigException(
          "'"
              + s
              + "' is not a Kubernetes quantity for the "
              + key
              + " quota: give a number with an optional suffix (m, Ki, Mi, Gi, ...), e.g. "
              + example);
    }
  }

  /** The pool keys, in schema order ({@code pool.*} and {@code kubernetes.pool.*}). */
  static List<Field> poolFields() {
    return FIELDS.stream()
        .filter(f -> f.path.startsWith("pool.") || f.path.startsWith("kubernetes.pool."))
        .toList();
  }

  private static final Pattern POOL_NAME = Pattern.compile("[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?");

  private static void poolName(String v) {
    if (!POOL_NAME.matcher(v).matches()) {
      throw new ConfigException(
          "'"
              + v
              + "' cannot name a pool: it goes into labels, so use lower-case letters, digits and"
              + " '-' (at most 40, starting and ending with a letter or digit), e.g. default");
    }
  }

  private static void poolCount(String key, Object v, long least, long most) {
    long n = (Long) v;
    if (n < least || n > most) {
      throw new ConfigException(
          key
              + " "
              + n
              + (least == most
                  ? " is not supported: only "
                      + least
                      + " is (a used sandbox is never handed out again)"
                  : " is out of range: give " + least + " to " + most));
    }
  }

  /** A YAML integer as an int; beyond int the budget's own range check could not name it. */
  private static int toInt(String key, Object v) {
    long n = (Long) v;
    if (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
      throw new ConfigException("budgets." + key + " " + n + " is too large: e.g. 1000");
    }
    return (int) n;
  }

  private static Action action(Object v) {
    return Action.valueOf(((String) v).toUpperCase(Locale.ROOT));
  }

  private static Action actionOf(String key, String value) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    if (!ACTIONS.contains(v)) {
      throw new ConfigException(
          "the action for '" + key + "' is '" + value + "': use allow, ask or deny");
    }
    return action(v);
  }

  /** Adds comma-separated rules (or addresses) to a policy. */
  private static NetworkPolicy withList(NetworkPolicy p, String list, boolean addresses) {
    NetworkPolicy.Builder b = p.toBuilder();
    for (String item : list.split(",")) {
      String t = item.strip();
      if (!t.isEmpty()) {
        if (addresses) {
          b.allowAddress(t);
        } else {
          b.allow(t);
        }
      }
    }
    return b.build();
  }

  private Schema() {}

  private static Field scalar(
      String path,
      Kind kind,
      String example,
      BiConsumer<SandboxConfig.Builder, Object> apply,
      Function<SandboxConfig, @Nullable Object> read) {
    return new Field(path, kind, example, List.of(), "", apply, null, read);
  }

  /**
   * A Kubernetes key that the backend reads (AgentNestConfig.kubernetes): {@code apply} validates
   * it, and sets what the sandbox's own configuration also holds.
   */
  private static Field kube(
      String path, Kind kind, String example, BiConsumer<SandboxConfig.Builder, Object> check) {
    return new Field(path, kind, example, List.of(), "", check, null, null);
  }

  /** A key outside the sandbox's configuration (the pool's): {@code check} validates it. */
  private static Field side(
      String path, Kind kind, String example, BiConsumer<SandboxConfig.Builder, Object> check) {
    return new Field(path, kind, example, List.of(), "", check, null, null);
  }

  private static Field map(
      String path,
      String example,
      EntryApplier putEntry,
      Function<SandboxConfig, @Nullable Object> read) {
    return new Field(path, Kind.STRING_MAP, example, List.of(), "", null, putEntry, read);
  }

  /** The keys allowed directly under a group ("" for the section itself), in schema order. */
  static List<String> keysUnder(String group) {
    Set<String> keys = new LinkedHashSet<>();
    String prefix = group.isEmpty() ? "" : group + ".";
    for (Field f : FIELDS) {
      if (f.path.startsWith(prefix)) {
        String rest = f.path.substring(prefix.length());
        int dot = rest.indexOf('.');
        keys.add(dot < 0 ? rest : rest.substring(0, dot));
      }
    }
    return List.copyOf(keys);
  }

  /** The groups ({@code limits}, ...), in schema order. */
  static List<String> groups() {
    Set<String> groups = new LinkedHashSet<>();
    for (Field f : FIELDS) {
      if (!f.group.isEmpty()) {
        groups.add(f.group);
      }
    }
    return new ArrayList<>(groups);
  }

  static boolean isGroup(String path) {
    return groups().contains(path);
  }

  static @Nullable Field field(String path) {
    for (Field f : FIELDS) {
      if (f.path.equals(path)) {
        return f;
      }
    }
    return null;
  }

  /** The last segment of a path. */
  static String keyOf(String path) {
    return path.substring(path.lastIndexOf('.') + 1);
  }

  /**
   * "; did you mean 'memory'?" among the keys of {@code group}; else a key of another group the
   * word is near ("; did you mean 'read_only_root' under 'security:'?"); else the valid keys.
   */
  static String unknownKeyHint(String key, String group) {
    List<String> valid = keysUnder(group);
    if (Suggestions.nearest(key, valid).isPresent()) {
      return Suggestions.hint(key, valid, "valid keys here");
    }
    List<String> elsewhere = new ArrayList<>();
    for (String g : groups()) {
      if (!g.equals(group)) {
        elsewhere.add(g);
      }
    }
    if (!group.isEmpty()) {
      elsewhere.add("");
    }
    List<String> paths = new ArrayList<>();
    for (String g : elsewhere) {
      for (String k : keysUnder(g)) {
        if (!isGroup(g.isEmpty() ? k : g + "." + k)) {
          paths.add(g.isEmpty() ? k : g + "." + k);
        }
      }
    }
    List<String> leafKeys = new ArrayList<>();
    paths.forEach(p -> leafKeys.add(keyOf(p)));
    Optional<String> near = Suggestions.nearest(key, leafKeys);
    if (near.isPresent()) {
      String path = paths.get(leafKeys.indexOf(near.get()));
      int dot = path.lastIndexOf('.');
      if (dot < 0) {
        return "; '" + near.get() + "' goes directly in the section, not under '" + group + ":'";
      }
      return "; did you mean '" + near.get() + "' (under '" + path.substring(0, dot) + ":')?";
    }
    return Suggestions.hint(key, valid, "valid keys here");
  }

  /** An example map for a group, for error messages: {@code {memory: 512m}}. */
  static String groupExample(String group) {
    List<String> keys = keysUnder(group);
    String first = keys.get(0);
    String path = group.isEmpty() ? first : group + "." + first;
    Field f = field(path);
    return "{" + first + ": " + (f == null ? groupExample(path) : f.example) + "}";
  }

  /**
   * Converts a scalar to the field's Java value, or throws a {@link ConfigException} whose message
   * (without location) names the expected type with an example.
   *
   * @param text the scalar's text
   * @param bool the YAML boolean the parser saw (YAML accepts yes/no too), or null
   * @param number the YAML number the parser saw, or null
   */
  static Object convert(Field f, String text, @Nullable Boolean bool, @Nullable Number number) {
    return switch (f.kind) {
      case STRING, FILE -> text;
      case CHOICE -> {
        if (!f.choices.contains(text)) {
          throw new ConfigException(
              "'"
                  + text
                  + "' is not supported; supported: "
                  + String.join(", ", f.choices)
                  + (f.help.isEmpty() ? "" : " (" + f.help + ")"));
        }
        yield text;
      }
      case SIZE -> {
        Long integral = integral(f, number);
        if (integral != null) {
          yield integral;
        }
        if (!SIZE.matcher(text).matches()) {
          throw typeError(f, "'" + text + "'");
        }
        yield Sizes.parse(f.key, text);
      }
      case DURATION -> {
        Long integral = integral(f, number);
        if (integral != null) {
          yield Duration.ofSeconds(integral);
        }
        yield Durations.parse(text).orElseThrow(() -> typeError(f, "'" + text + "'"));
      }
      case NUMBER -> {
        if (number != null) {
          yield number.doubleValue();
        }
        if (!NUMBER.matcher(text).matches()) {
          throw typeError(f, "'" + text + "'");
        }
        yield Double.parseDouble(text.strip());
      }
      case INTEGER -> {
        Long integral = integral(f, number);
        if (integral != null) {
          yield integral;
        }
        if (number != null || !INTEGER.matcher(text).matches()) {
          throw typeError(f, "'" + text + "'");
        }
        yield Long.parseLong(text.strip());
      }
      case BOOLEAN -> {
        if (bool != null) {
          yield bool;
        }
        if (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")) {
          yield Boolean.parseBoolean(text);
        }
        throw typeError(f, "'" + text + "'");
      }
      case STRING_MAP, CREDENTIALS -> throw typeError(f, "'" + text + "'");
    };
  }

  private static @Nullable Long integral(Field f, @Nullable Number number) {
    if (number == null) {
      return null;
    }
    if (number instanceof BigInteger big) {
      if (big.bitLength() > 62) {
        throw new ConfigException(f.key + " " + big + " is too large");
      }
      return big.longValue();
    }
    if (number instanceof BigDecimal || number instanceof Double || number instanceof Float) {
      return null;
    }
    return number.longValue();
  }

  static ConfigException typeError(Field f, String got) {
    return new ConfigException(typeMessage(f, got));
  }

  static String typeMessage(Field f, String got) {
    return "expected " + f.kind.description + ", e.g. " + f.example + "; got " + got;
  }

  /** The value written to the effective config: sizes and durations as text, others as is. */
  static @Nullable Object output(Field f, @Nullable Object value) {
    if (value == null) {
      return null;
    }
    return switch (f.kind) {
      case SIZE -> Sizes.format((Long) value);
      case DURATION -> formatDuration((Duration) value);
      case FILE -> value instanceof FileValue fv ? fv.path() : value;
      default -> value;
    };
  }

  /** {@code 1d}, {@code 2h}, {@code 30m}, {@code 45s}, {@code 500ms}: the largest exact unit. */
  static String formatDuration(Duration d) {
    long ms = d.toMillis();
    if (ms != 0 && ms % 86_400_000L == 0) {
      return ms / 86_400_000L + "d";
    }
    if (ms != 0 && ms % 3_600_000L == 0) {
      return ms / 3_600_000L + "h";
    }
    if (ms != 0 && ms % 60_000L == 0) {
      return ms / 60_000L + "m";
    }
    if (ms % 1000 == 0) {
      return ms / 1000 + "s";
    }
    return ms + "ms";
  }
}
