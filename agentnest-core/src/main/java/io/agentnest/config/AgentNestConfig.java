package io.agentnest.config;

import io.agentnest.ConfigException;
import io.agentnest.PoolOptions;
import io.agentnest.RemoteServer;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxPool;
import io.agentnest.config.Schema.Field;
import io.agentnest.config.Schema.FileValue;
import io.agentnest.config.Schema.Kind;
import io.agentnest.config.YamlTree.Entry;
import io.agentnest.config.YamlTree.ListNode;
import io.agentnest.config.YamlTree.MapNode;
import io.agentnest.config.YamlTree.Node;
import io.agentnest.config.YamlTree.Pos;
import io.agentnest.config.YamlTree.ScalarNode;
import io.agentnest.config.YamlWriter.Item;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * AgentNest's configuration file: {@code version: 1}, a {@code defaults:} section and named {@code
 * profiles:}, each mapping onto a {@link SandboxConfig}. Immutable; every value is validated when
 * the file is loaded, and every error is a {@link ConfigException} naming the file, line, column
 * and key, e.g. {@code agentnest.yaml:4:5: defaults.limits.memroy: unknown key; did you mean
 * 'memory'?}.
 *
 * <pre>{@code
 * AgentNestConfig config = AgentNestConfig.load();     // ./agentnest.yaml, then ~/.config/agentnest/
 * Sandbox.create(config.sandboxConfig("data"));       // defaults overlaid with profile 'data'
 * }</pre>
 *
 * <p>Environment variables override single keys, after the profile: {@code AGENTNEST_IMAGE}, {@code
 * AGENTNEST_LIMITS_MEMORY}, ... (the key's path joined with '_', upper-cased; see {@link
 * #environmentVariables()}); an empty value counts as unset. {@code AGENTNEST_CONFIG} names the
 * file to load instead of discovering one, {@code AGENTNEST_PROFILE} the profile {@link
 * #sandboxConfig()} uses.
 *
 * <p>Why it is over 600 lines: loading with positions for errors, the profile overlay, environment
 * overrides and the effective configuration printed back share one parsed tree; the per-key table
 * is {@code Schema}. The next split is the printing back (issue 18).
 */
public final class AgentNestConfig {
  /** The file name looked for in the working directory and the user config directory. */
  public static final String FILE_NAME = "agentnest.yaml";

  /** Names the config file to use instead of discovering one. */
  public static final String ENV_CONFIG = "AGENTNEST_CONFIG";

  /** Names the profile {@link #sandboxConfig()} uses. */
  public static final String ENV_PROFILE = "AGENTNEST_PROFILE";

  private static final String BUILT_IN = "built-in defaults";
  static final long MAX_FILE_BYTES = 1 << 20;
  private static final Pattern PROFILE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  private static final List<String> TOP_KEYS = List.of("version", "defaults", "profiles");

  /** A value and where it came from. */
  private record Value(Object value, String where, String path, String comment) {
    /** {@code file:line:col: path: } or {@code environment variable X: }. */
    String prefix() {
      return where + ": " + (path.isEmpty() ? "" : path + ": ");
    }
  }

  /** The values one section sets (scalars, and the entries of maps). */
  private static final class Layer {
    final Map<Field, Value> values = new LinkedHashMap<>();
    final Map<Field, Map<String, Value>> maps = new LinkedHashMap<>();

    Layer overlay(Layer top) {
      Layer l = new Layer();
      l.values.putAll(values);
      maps.forEach((f, m) -> l.maps.put(f, new LinkedHashMap<>(m)));
      l.values.putAll(top.values);
      top.maps.forEach((f, m) -> l.maps.computeIfAbsent(f, k -> new LinkedHashMap<>()).putAll(m));
      return l;
    }
  }

  /** A section resolved into a SandboxConfig. */
  private record Resolved(SandboxConfig config, Layer layer) {}

  private final @Nullable Path source;
  private final String sourceName;
  private final Resolved defaults;
  private final Map<String, Resolved> profiles;
  private final @Nullable String envProfile;
  private final List<String> envOverrides;

  private AgentNestConfig(
      @Nullable Path source,
      String sourceName,
      Resolved defaults,
      Map<String, Resolved> profiles,
      @Nullable String envProfile,
      List<String> envOverrides) {
    this.source = source;
    this.sourceName = sourceName;
    this.defaults = defaults;
    this.profiles = Collections.unmodifiableMap(new LinkedHashMap<>(profiles));
    this.envProfile = envProfile;
    this.envOverrides = List.copyOf(envOverrides);
  }

  /**
   * Loads {@code $AGENTNEST_CONFIG}, or the first of {@code ./agentnest.yaml} and {@code
   * $XDG_CONFIG_HOME/agentnest/agentnest.yaml} (default {@code ~/.config/agentnest/agentnest.yaml})
   * that exists; the built-in defaults when there is none. Applies the environment overrides.
   */
  public static AgentNestConfig load() {
    return load(System.getenv());
  }

  /** {@link #load()} with the given environment instead of the process's. */
  public static AgentNestConfig load(Map<String, String> env) {
    return load(env, Path.of(""));
  }

  static AgentNestConfig load(Map<String, String> env, Path workingDir) {
    Optional<Path> file = discover(env, workingDir);
    if (file.isPresent()) {
      Path f = file.get();
      String name = f.toString();
      // A file found in the working directory comes with whatever was checked out there.
      boolean untrusted = f.equals(workingDir.resolve(FILE_NAME));
      return build(f, name, read(f, name), baseDir(f), env, env, untrusted);
    }
    return build(null, BUILT_IN, null, null, env, env);
  }

  /** Loads {@code file} and applies the process's environment overrides. */
  public static AgentNestConfig load(Path file) {
    return load(file, System.getenv());
  }

  /** Loads {@code file} and applies the overrides of {@code env}. */
  public static AgentNestConfig load(Path file, Map<String, String> env) {
    String name = file.toString();
    return build(file, name, read(file, name), baseDir(file), env, env);
  }

  /**
   * Parses YAML text; {@code sourceName} is used in error messages. No environment overrides apply
   * (the secrets of {@code network.credentials} are still read from the process's environment); a
   * relative seccomp profile path is resolved against the working directory.
   */
  public static AgentNestConfig parse(String yaml, String sourceName) {
    return build(null, sourceName, yaml, Path.of("").toAbsolutePath(), Map.of(), System.getenv());
  }

  /**
   * {@link #parse(String, String)} with the overrides of {@code env}, which also holds the secrets
   * {@code network.credentials} names.
   */
  public static AgentNestConfig parse(String yaml, String sourceName, Map<String, String> env) {
    return build(null, sourceName, yaml, Path.of("").toAbsolutePath(), env, env);
  }

  /** The config file discovery would pick, if any (see {@link #load()}). */
  static Optional<Path> discover(Map<String, String> env, Path workingDir) {
    String explicit = env.get(ENV_CONFIG);
    if (explicit != null && !explicit.isBlank()) {
      Path p = Path.of(explicit);
      if (!Files.isRegularFile(p)) {
        throw new ConfigException(
            "environment variable "
                + ENV_CONFIG
                + ": config file "
                + p
                + (Files.isDirectory(p) ? " is a directory" : " does not exist"));
      }
      return Optional.of(p);
    }
    List<Path> candidates = new ArrayList<>();
    candidates.add(workingDir.resolve(FILE_NAME));
    candidates.add(userConfigFile(env));
    return candidates.stream().filter(Files::isRegularFile).findFirst();
  }

  private static Path userConfigFile(Map<String, String> env) {
    String xdg = env.get("XDG_CONFIG_HOME");
    Path base;
    if (xdg != null && !xdg.isBlank()) {
      base = Path.of(xdg);
    } else {
      String home = env.get("HOME");
      base =
          Path.of(home != null && !home.isBlank() ? home : System.getProperty("user.home", "."))
              .resolve(".config");
    }
    return base.resolve("agentnest").resolve(FILE_NAME);
  }

  /**
   * The environment variables that override single keys, each with its key path, in schema order
   * ({@code AGENTNEST_IMAGE -> image}, {@code AGENTNEST_LIMITS_MEMORY -> limits.memory}, ...).
   */
  public static Map<String, String> environmentVariables() {
    Map<String, String> m = new LinkedHashMap<>();
    for (Field f : Schema.FIELDS) {
      String name = f.envName();
      if (name != null) {
        m.put(name, f.path);
      }
    }
    return Collections.unmodifiableMap(m);
  }

  /**
   * The defaults section with the environment overrides, or the profile {@code $AGENTNEST_PROFILE}
   * names when that is set.
   */
  public SandboxConfig sandboxConfig() {
    return sandboxConfig(null);
  }

  /**
   * The defaults overlaid with {@code profile} (maps such as {@code env} are merged key by key),
   * then with the environment overrides. A null profile means {@link #sandboxConfig()}.
   *
   * @throws ConfigException for an unknown profile, naming the known ones and the nearest
   */
  public SandboxConfig sandboxConfig(@Nullable String profile) {
    return resolved(profile).config();
  }

  /**
   * The {@code kubernetes:} block of the defaults overlaid with {@code profile} (null: as {@link
   * #sandboxConfig()}), then with the {@code AGENTNEST_KUBERNETES_*} environment variables: what
   * the Kubernetes backend reads for its cluster-wide settings (context, namespace prefix, quota).
   * Every value was validated when the file was loaded.
   *
   * @throws ConfigException for an unknown profile
   */
  public KubernetesOptions kubernetes(@Nullable String profile) {
    Layer layer = resolved(profile).layer();
    Map<String, Object> v = new LinkedHashMap<>();
    for (Field f : Schema.kubernetesFields()) {
      Value set = layer.values.get(f);
      if (set != null) {
        v.put(f.path.substring("kubernetes.".length()), set.value());
      }
    }
    Object pods = v.get("quota.pods");
    return new KubernetesOptions(
        (String) v.get("context"),
        (String) v.get("namespace_prefix"),
        (String) v.get("runtime_class"),
        (String) v.get("tenant"),
        new KubernetesOptions.Quota(
            pods == null ? null : Math.toIntExact((Long) pods),
            (String) v.get("quota.cpu"),
            (String) v.get("quota.memory")),
        (String) v.get("api"));
  }

  /**
   * Starts the pool the {@code pool:} block (or {@code kubernetes: pool:}) of {@code profile}
   * (null: the defaults section) describes, with that profile's sandbox configuration as template;
   * empty when the section has no pool. (It was {@code SandboxPool.start(config, profile)}: the API
   * may not import the configuration, which sits above it.)
   */
  public Optional<SandboxPool> startPool(@Nullable String profile) {
    Optional<PoolOptions> options = pool(profile);
    if (options.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(SandboxPool.start(sandboxConfig(profile), options.get()));
  }

  /**
   * The warm pool the {@code pool:} block (or {@code kubernetes: pool:}, the same pool: its {@code
   * template} is the pool's name) of the defaults overlaid with {@code profile} describes; empty
   * when neither sets a key. A pool takes the profile's sandbox configuration as its template.
   *
   * @throws ConfigException for an unknown profile, or settings that contradict each other (with
   *     the location of one of them)
   */
  public Optional<PoolOptions> pool(@Nullable String profile) {
    Layer layer = resolved(profile).layer();
    Map<String, Value> set = new LinkedHashMap<>();
    for (Field f : Schema.poolFields()) {
      Value v = layer.values.get(f);
      if (v != null) {
        set.put(f.path, v);
      }
    }
    if (set.isEmpty()) {
      return Optional.empty();
    }
    Value first = set.values().iterator().next();
    PoolOptions.Builder b = PoolOptions.builder();
    try {
      String name = poolAlias(set, "pool.name", "kubernetes.pool.template");
      if (name != null) {
        b.name(name);
      }
      Long minIdle = poolAlias(set, "pool.min_idle", "kubernetes.pool.min_idle");
      if (minIdle != null) {
        b.minIdle(minIdle.intValue());
      }
      Long maxIdle = poolValue(set, "pool.max_idle");
      if (maxIdle != null) {
        b.maxIdle(maxIdle.intValue());
      }
      Long maxTotal = poolValue(set, "pool.max_total");
      if (maxTotal != null) {
        b.maxTotal(maxTotal.intValue());
      }
      Long maxUses = poolValue(set, "pool.max_uses");
      if (maxUses != null) {
        b.maxUses(maxUses.intValue());
      }
      Duration idleTtl = poolValue(set, "pool.idle_ttl");
      if (idleTtl != null) {
        b.idleTtl(idleTtl);
      }
      Long refill = poolValue(set, "pool.refill_concurrency");
      if (refill != null) {
        b.refillConcurrency(refill.intValue());
      }
      String exhausted = poolValue(set, "pool.on_exhausted");
      if (exhausted != null) {
        b.onExhausted(
            exhausted.equals("fail") ? PoolOptions.Exhaustion.FAIL : PoolOptions.Exhaustion.WAIT);
      }
      Duration maxWait = poolValue(set, "pool.max_wait");
      if (maxWait != null) {
        b.maxWait(maxWait);
      }
      return Optional.of(b.build());
    } catch (ConfigException e) {
      throw new ConfigException(first.where() + ": pool: " + e.getMessage());
    }
  }

  @SuppressWarnings("unchecked")
  private static <T> @Nullable T poolValue(Map<String, Value> set, String path) {
    Value v = set.get(path);
    return v == null ? null : (T) v.value();
  }

  /** A pool setting that two keys can give: they must agree. */
  private static <T> @Nullable T poolAlias(Map<String, Value> set, String path, String alias) {
    T a = poolValue(set, path);
    T b = poolValue(set, alias);
    if (a != null && b != null && !a.equals(b)) {
      throw new ConfigException(
          path + " (" + a + ") and " + alias + " (" + b + ") name the same setting: keep one");
    }
    return a != null ? a : b;
  }

  /**
   * The file this configuration was loaded from; empty for the built-in defaults or parsed text.
   */
  public Optional<Path> source() {
    return Optional.ofNullable(source);
  }

  /** The file name used in messages, or {@code built-in defaults}. */
  public String sourceName() {
    return sourceName;
  }

  /** The profile names, in file order. */
  public Set<String> profiles() {
    return profiles.keySet();
  }

  /** The profile {@link #sandboxConfig()} uses ({@code $AGENTNEST_PROFILE}), if any. */
  public Optional<String> defaultProfile() {
    return Optional.ofNullable(envProfile);
  }

  /**
   * The effective configuration of {@code profile} (null: as {@link #sandboxConfig()}) as a
   * self-contained YAML file: every key under {@code defaults:} with its merged value, commented
   * with where each set value came from. Parsing it gives the same {@link SandboxConfig}.
   */
  public String effectiveYaml(@Nullable String profile) {
    String name = profile != null ? profile : envProfile;
    Resolved r = resolved(profile);
    List<String> header = new ArrayList<>();
    header.add("AgentNest effective configuration");
    header.add("source: " + sourceName);
    header.add("profile: " + (name == null ? "none (defaults)" : name));
    if (!envOverrides.isEmpty()) {
      header.add("environment overrides: " + String.join(", ", envOverrides));
    }
    return YamlWriter.yaml(header, items(r));
  }

  /**
   * {@link #effectiveYaml} as JSON (which is also valid YAML: parsing it gives the same config).
   */
  public String effectiveJson(@Nullable String profile) {
    return YamlWriter.json(items(resolved(profile)));
  }

  @Override
  public String toString() {
    return "AgentNestConfig[" + sourceName + ", profiles=" + profiles.keySet() + "]";
  }

  private Resolved resolved(@Nullable String profile) {
    String name = profile;
    String origin = "";
    if (name == null) {
      if (envProfile == null) {
        return defaults;
      }
      name = envProfile;
      origin = "environment variable " + ENV_PROFILE + ": ";
    }
    Resolved r = profiles.get(name);
    if (r == null) {
      String near =
          Suggestions.nearest(name, profiles.keySet())
              .map(n -> "; did you mean '" + n + "'?")
              .orElse("");
      String known =
          profiles.isEmpty()
              ? (sourceName.equals(BUILT_IN)
                  ? " (no config file was found, so no profiles are defined; see agentnest config)"
                  : " (" + sourceName + " defines no profiles)")
              : " (known profiles in "
                  + sourceName
                  + ": "
                  + String.join(", ", profiles.keySet())
                  + ")";
      throw new ConfigException(origin + "unknown profile '" + name + "'" + near + known);
    }
    return r;
  }

  // ---------------------------------------------------------------------------------------------
  // Loading

  private static @Nullable Path baseDir(Path file) {
    return file.toAbsolutePath().getParent();
  }

  private static String read(Path file, String name) {
    try {
      if (Files.isDirectory(file)) {
        throw new ConfigException(name + ": is a directory, not a config file");
      }
      if (Files.size(file) > MAX_FILE_BYTES) {
        throw new ConfigException(
            name + ": config file is larger than " + MAX_FILE_BYTES + " bytes");
      }
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new ConfigException(name + ": config file does not exist");
    } catch (CharacterCodingException e) {
      throw new ConfigException(name + ": config file is not valid UTF-8");
    } catch (IOException e) {
      throw new ConfigException(name + ": cannot read config file: " + e);
    }
  }

  private static AgentNestConfig build(
      @Nullable Path source,
      String sourceName,
      @Nullable String yaml,
      @Nullable Path baseDir,
      Map<String, String> env,
      Map<String, String> secretEnv) {
    return build(source, sourceName, yaml, baseDir, env, secretEnv, false);
  }

  /**
   * {@code workingDirFile}: the file was found in the working directory rather than named by the
   * user (AGENTNEST_CONFIG, the user config directory, or a program's own path or text).
   */
  private static AgentNestConfig build(
      @Nullable Path source,
      String sourceName,
      @Nullable String yaml,
      @Nullable Path baseDir,
      Map<String, String> env,
      Map<String, String> secretEnv,
      boolean workingDirFile) {
    Loader loader =
        new Loader(
            sourceName,
            baseDir == null ? Path.of("") : baseDir,
            new Credentials(sourceName, secretEnv));
    Layer defaultsLayer = new Layer();
    Map<String, Layer> profileLayers = new LinkedHashMap<>();
    @Nullable Node root = yaml == null ? null : YamlTree.parse(yaml, sourceName);
    if (root != null && !(root instanceof ScalarNode s && s.isNull())) {
      if (!(root instanceof MapNode map)) {
        throw YamlTree.error(
            sourceName,
            root.pos(),
            "",
            "expected a map with version, defaults and profiles, e.g. 'version: 1'; got "
                + describe(root));
      }
      for (Entry e : map.entries().values()) {
        String key = e.key();
        String path = YamlTree.child("", key);
        switch (key) {
          case "version" -> loader.version(e.value());
          case "defaults" -> defaultsLayer = loader.section(e.value(), path);
          case "profiles" -> profileLayers = loader.profiles(e.value(), path);
          default -> {
            String hint =
                Schema.keysUnder("").contains(key)
                    ? "; settings go under 'defaults:' or a profile"
                    : Suggestions.hint(key, TOP_KEYS, "valid keys");
            throw YamlTree.error(sourceName, e.keyPos(), path, "unknown key" + hint);
          }
        }
      }
    }
    trustRemote(defaultsLayer, env, workingDirFile);
    for (Layer p : profileLayers.values()) {
      trustRemote(p, env, workingDirFile);
    }
    List<String> applied = new ArrayList<>();
    Layer envLayer = environmentLayer(env, applied);
    Resolved defaults = resolve(defaultsLayer.overlay(envLayer));
    Map<String, Resolved> profiles = new LinkedHashMap<>();
    for (Map.Entry<String, Layer> p : profileLayers.entrySet()) {
      profiles.put(p.getKey(), resolve(defaultsLayer.overlay(p.getValue()).overlay(envLayer)));
    }
    String envProfile = env.get(ENV_PROFILE);
    if (envProfile != null && envProfile.isBlank()) {
      envProfile = null;
    }
    return new AgentNestConfig(source, sourceName, defaults, profiles, envProfile, applied);
  }

  /**
   * The tenant's key comes from AGENTNEST_API_KEY, so the server it is sent to must come from a
   * source as trusted as the key (issue 42, 16): AGENTNEST_URL wins over any file, and a file that
   * merely lies in the working directory (a cloned repository's, say) cannot name the server.
   */
  private static void trustRemote(Layer layer, Map<String, String> env, boolean workingDirFile) {
    Field f = Objects.requireNonNull(Schema.field("remote.url"));
    Value v = layer.values.get(f);
    if (v == null) {
      return;
    }
    String envUrl = env.get(RemoteServer.ENV_URL);
    if (envUrl != null && !envUrl.isBlank()) {
      // The environment's server is used (RemoteBackend.server()); the file's is ignored.
      layer.values.remove(f);
      return;
    }
    if (workingDirFile) {
      throw new ConfigException(
          v.prefix()
              + "a configuration file found in the working directory cannot name the server"
              + " AGENTNEST_API_KEY is sent to (any checked-out directory could carry one):"
              + " export AGENTNEST_URL="
              + v.value()
              + " if you trust that server, or move remote.url to the user configuration"
              + " (~/.config/agentnest/agentnest.yaml) or name this file in "
              + ENV_CONFIG);
    }
  }

  private static Layer environmentLayer(Map<String, String> env, List<String> applied) {
    Layer layer = new Layer();
    for (Field f : Schema.FIELDS) {
      String name = f.envName();
      String text = name == null ? null : env.get(name);
      if (name == null || text == null || text.isBlank()) {
        continue;
      }
      String where = "environment variable " + name;
      try {
        layer.values.put(
            f, new Value(Schema.convert(f, text.strip(), null, null), where, "", "from " + name));
      } catch (ConfigException e) {
        throw new ConfigException(where + ": " + e.getMessage());
      }
      applied.add(name);
    }
    return layer;
  }

  /**
   * Applies the values one key at a time onto a valid builder, so that a {@code build()} validation
   * error can be blamed on the key (and its location) that caused it.
   */
  private static Resolved resolve(Layer layer) {
    SandboxConfig.Builder b = SandboxConfig.builder();
    for (Field f : Schema.FIELDS) {
      Schema.EntryApplier putEntry = f.putEntry;
      BiConsumer<SandboxConfig.Builder, Object> setter = f.apply;
      if (putEntry != null) {
        Map<String, Value> entries = layer.maps.get(f);
        if (entries == null) {
          continue;
        }
        for (Map.Entry<String, Value> e : entries.entrySet()) {
          Value v = e.getValue();
          apply(v, () -> putEntry.put(b, e.getKey(), (String) v.value()));
          check(b, v);
        }
      } else if (f.kind == Kind.CREDENTIALS && setter != null) {
        Value v = layer.values.get(f);
        if (v != null) {
          // Each entry is applied and checked on its own, so an error names its line.
          for (Object o : (List<?>) v.value()) {
            Credentials.Credential c = (Credentials.Credential) o;
            Value entry = new Value(c, c.where(), c.path(), v.comment());
            apply(entry, () -> setter.accept(b, c));
            check(b, entry);
          }
        }
      } else if (setter != null) {
        Value v = layer.values.get(f);
        if (v != null) {
          apply(v, () -> setter.accept(b, v.value()));
          check(b, v);
        }
      }
    }
    return new Resolved(b.build(), layer);
  }

  private static void apply(Value v, Runnable setter) {
    try {
      setter.run();
    } catch (ConfigException e) {
      throw new ConfigException(v.prefix() + e.getMessage());
    }
  }

  private static void check(SandboxConfig.Builder b, Value v) {
    try {
      b.build();
    } catch (ConfigException e) {
      throw new ConfigException(v.prefix() + e.getMessage());
    }
  }

  private static String describe(Node n) {
    if (n instanceof MapNode) {
      return "a map";
    }
    if (n instanceof YamlTree.ListNode) {
      return "a list";
    }
    String text = ((ScalarNode) n).text();
    if (text == null) {
      return "nothing";
    }
    return "'" + (text.length() > 60 ? text.substring(0, 60) + "..." : text) + "'";
  }

  /** Reads the sections of one file into layers. */
  private static final class Loader {
    private final String source;
    private final Path baseDir;
    private final Credentials credentials;

    Loader(String source, Path baseDir, Credentials credentials) {
      this.source = source;
      this.baseDir = baseDir;
      this.credentials = credentials;
    }

    void version(Node node) {
      String text = node instanceof ScalarNode s ? s.text() : null;
      if (text == null || !text.strip().matches("[0-9]{1,9}")) {
        throw YamlTree.error(
            source,
            node.pos(),
            "version",
            "expected an integer, e.g. version: 1; got " + describe(node));
      }
      int v = Integer.parseInt(text.strip());
      if (!Schema.VERSIONS.contains(v)) {
        throw YamlTree.error(
            source,
            node.pos(),
            "version",
            "unsupported version "
                + v
                + "; this AgentNest reads version "
                + Schema.VERSIONS.stream()
                    .map(String::valueOf)
                    .reduce((a, c) -> a + ", " + c)
                    .orElse(""));
      }
    }

    Map<String, Layer> profiles(Node node, String path) {
      Map<String, Layer> result = new LinkedHashMap<>();
      if (isNull(node)) {
        return result;
      }
      if (!(node instanceof MapNode map)) {
        throw YamlTree.error(
            source,
            node.pos(),
            path,
            "expected a map of profile names to settings, e.g. {data: {limits: {memory: 2g}}}; got "
                + describe(node));
      }
      for (Entry e : map.entries().values()) {
        String childPath = YamlTree.child(path, e.key());
        if (!PROFILE_NAME.matcher(e.key()).matches()) {
          throw YamlTree.error(
              source,
              e.keyPos(),
              childPath,
              "invalid profile name '"
                  + e.key()
                  + "': use letters, digits, '.', '_' and '-' (at most 64)");
        }
        result.put(e.key(), section(e.value(), childPath));
      }
      return result;
    }

    /** A settings section: {@code defaults:} or one profile. */
    Layer section(Node node, String path) {
      Layer layer = new Layer();
      if (!isNull(node)) {
        group(node, path, "", layer);
      }
      return layer;
    }

    private void group(Node node, String path, String group, Layer layer) {
      if (!(node instanceof MapNode map)) {
        throw YamlTree.error(
            source,
            node.pos(),
            path,
            "expected a map, e.g. "
                + (group.isEmpty() ? "" : Schema.keyOf(group) + ": ")
                + Schema.groupExample(group)
                + "; got "
                + describe(node));
      }
      List<String> valid = Schema.keysUnder(group);
      for (Entry e : map.entries().values()) {
        String childPath = YamlTree.child(path, e.key());
        if (!valid.contains(e.key())) {
          throw YamlTree.error(
              source, e.keyPos(), childPath, "unknown key" + Schema.unknownKeyHint(e.key(), group));
        }
        String schemaPath = group.isEmpty() ? e.key() : group + "." + e.key();
        if (isNull(e.value())) {
          continue; // not set: inherited
        }
        Field f = Schema.field(schemaPath);
        if (f == null) {
          group(e.value(), childPath, schemaPath, layer);
        } else if (f.kind == Kind.STRING_MAP) {
          stringMap(f, e.value(), childPath, layer);
        } else if (f.kind == Kind.CREDENTIALS) {
          Pos pos = e.value().pos();
          layer.values.put(
              f,
              new Value(
                  credentials.parse(e.value(), childPath),
                  where(pos),
                  childPath,
                  comment(childPath, pos)));
        } else {
          scalar(f, e.value(), childPath, layer);
        }
      }
    }

    private void scalar(Field f, Node node, String path, Layer layer) {
      String where = where(node.pos());
      if (node instanceof ListNode list && LISTS.contains(f.path)) {
        // allow: [pypi.org, "*.pythonhosted.org"] is the same as allow: "pypi.org, ..."
        List<String> items = new ArrayList<>();
        for (Node item : list.items()) {
          if (!(item instanceof ScalarNode s) || s.text() == null) {
            throw new ConfigException(
                where
                    + ": "
                    + path
                    + ": expected a list of strings, e.g. [pypi.org, \"*.example.com\"]");
          }
          items.add(s.text());
        }
        layer.values.put(
            f, new Value(String.join(", ", items), where, path, comment(path, node.pos())));
        return;
      }
      if (!(node instanceof ScalarNode s) || s.text() == null) {
        throw new ConfigException(
            where + ": " + path + ": " + Schema.typeMessage(f, describe(node)));
      }
      Object value;
      try {
        Boolean bool =
            switch (s.token()) {
              case VALUE_TRUE -> Boolean.TRUE;
              case VALUE_FALSE -> Boolean.FALSE;
              default -> null;
            };
        value = Schema.convert(f, s.text(), bool, s.number());
        if (f.kind == Kind.FILE) {
          value = readFile(f, (String) value);
        }
      } catch (ConfigException e) {
        throw new ConfigException(where + ": " + path + ": " + e.getMessage());
      }
      layer.values.put(f, new Value(value, where, path, comment(path, node.pos())));
    }

    private void stringMap(Field f, Node node, String path, Layer layer) {
      if (!(node instanceof MapNode map)) {
        throw YamlTree.error(source, node.pos(), path, Schema.typeMessage(f, describe(node)));
      }
      Map<String, Value> entries = layer.maps.computeIfAbsent(f, k -> new LinkedHashMap<>());
      for (Entry e : map.entries().values()) {
        String childPath = YamlTree.child(path, e.key());
        Node v = e.value();
        if (!(v instanceof ScalarNode s) || s.text() == null) {
          throw YamlTree.error(
              source,
              v.pos(),
              childPath,
              "expected a string value, e.g. " + e.key() + ": value; got " + describe(v));
        }
        entries.put(
            e.key(),
            new Value(s.text(), where(e.keyPos()), childPath, comment(childPath, e.keyPos())));
      }
    }

    private FileValue readFile(Field f, String text) {
      if (text.isBlank()) {
        throw new ConfigException("the file path is empty");
      }
      Path p = baseDir.resolve(text.strip()).toAbsolutePath().normalize();
      try {
        if (Files.size(p) > MAX_FILE_BYTES) {
          throw new ConfigException("file " + p + " is larger than " + MAX_FILE_BYTES + " bytes");
        }
        return new FileValue(p.toString(), Files.readString(p, StandardCharsets.UTF_8));
      } catch (NoSuchFileException e) {
        throw new ConfigException(
            "file "
                + p
                + " does not exist (a relative path is resolved against the directory of "
                + source
                + ")");
      } catch (IOException e) {
        throw new ConfigException("cannot read " + f.key + " file " + p + ": " + e);
      }
    }

    private static String comment(String path, Pos pos) {
      return path + " (line " + pos.line() + ")";
    }

    private String where(Pos pos) {
      return source + ":" + pos.line() + ":" + pos.column();
    }
  }

  /** String keys that also take a YAML list of strings. */
  private static final Set<String> LISTS = Set.of("network.allow", "network.allow_addresses");

  private static boolean isNull(Node n) {
    return n instanceof ScalarNode s && s.isNull();
  }

  // ---------------------------------------------------------------------------------------------
  // Effective configuration

  private static List<Item> items(Resolved r) {
    List<Item> section = new ArrayList<>();
    Map<String, List<Item>> groups = new LinkedHashMap<>();
    groups.put("", section);
    for (Field f : Schema.FIELDS) {
      groupItems(f.group, groups).add(item(f, r));
    }
    List<Item> top = new ArrayList<>();
    top.add(new Item("version", (long) Schema.VERSIONS.get(Schema.VERSIONS.size() - 1), null));
    top.add(new Item("defaults", section, null));
    return top;
  }

  /** The items of {@code group} ("kubernetes.quota" nests under "kubernetes"), made on demand. */
  private static List<Item> groupItems(String group, Map<String, List<Item>> groups) {
    List<Item> found = groups.get(group);
    if (found != null) {
      return found;
    }
    int dot = group.lastIndexOf('.');
    List<Item> parent = groupItems(dot < 0 ? "" : group.substring(0, dot), groups);
    List<Item> items = new ArrayList<>();
    groups.put(group, items);
    parent.add(new Item(Schema.keyOf(group), items, null));
    return items;
  }

  private static Item item(Field f, Resolved r) {
    Layer layer = r.layer();
    if (f.kind == Kind.STRING_MAP) {
      Map<String, Value> set = layer.maps.getOrDefault(f, Map.of());
      Object value = f.read == null ? null : f.read.apply(r.config());
      Map<?, ?> effective = value instanceof Map<?, ?> m ? m : Map.of();
      List<Item> entries = new ArrayList<>();
      // In the order they were set (the SandboxConfig's map has no order).
      Set<String> keys = new LinkedHashSet<>(set.keySet());
      effective.keySet().forEach(k -> keys.add(String.valueOf(k)));
      for (String k : keys) {
        Object v = effective.get(k);
        Value origin = set.get(k);
        if (v != null) {
          entries.add(new Item(k, v, origin == null ? null : origin.comment()));
        }
      }
      return new Item(f.key, entries, null);
    }
    Value set = layer.values.get(f);
    String comment = set == null ? null : set.comment();
    if (f.kind == Kind.FILE) {
      return set == null
          ? new Item(f.key, null, "not set (AgentNest's built-in profile)")
          : new Item(f.key, Schema.output(f, set.value()), comment);
    }
    if (f.kind == Kind.CREDENTIALS) {
      List<Map<String, Object>> list = Credentials.describe(r.config().network());
      return list.isEmpty()
          ? new Item(f.key, null, "not set")
          : new Item(f.key, new YamlWriter.Flow(list), comment);
    }
    if (f.kind == Kind.CHOICE) {
      return new Item(f.key, set == null ? f.choices.get(0) : set.value(), comment);
    }
    // Keys only a backend reads (kubernetes.*) are not in the SandboxConfig: as they were set.
    Object value =
        f.read == null
            ? (set == null ? null : set.value())
            : Schema.output(f, f.read.apply(r.config()));
    if (value == null) {
      return new Item(f.key, null, "not set (the engine's default)");
    }
    return new Item(f.key, value, comment);
  }
}
