package io.agentnest;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Immutable sandbox configuration. Every security control is on by default; {@link Builder#build()}
 * validates and names the field and the fix when a value is wrong.
 *
 * <pre>{@code
 * SandboxConfig config = SandboxConfig.builder()
 *     .image("agentnest/python:latest")
 *     .memory("1g")
 *     .cpus(2)
 *     .env("MODE", "test")
 *     .execTimeout(Duration.ofSeconds(30))
 *     .build();
 * }</pre>
 *
 * <p>Why it is over 600 lines: it is the public surface of every setting, one documented setter per
 * field with its validation; the encodings live in {@code ConfigCodec} and the YAML schema.
 */
public final class SandboxConfig {
  /** The image {@code agentnest image build} produces. */
  public static final String DEFAULT_IMAGE = "agentnest/python:latest";

  /** Where the workspace lives inside every sandbox. */
  public static final String WORKSPACE = "/workspace";

  static final int MAX_STDIN_BYTES = 4 << 20;
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern LABEL_KEY =
      Pattern.compile("[a-z0-9]([a-z0-9._/-]{0,126}[a-z0-9])?");
  private static final Pattern USER = Pattern.compile("[0-9]{1,10}(:[0-9]{1,10})?");

  /** A DNS-1123 label: a tenant names a Kubernetes namespace. */
  private static final Pattern TENANT = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

  /** The runtime, and backend, that runs each sandbox as a microVM guest. */
  public static final String MICROVM = "microvm";

  private final String backend;
  private final String image;
  private final @Nullable String runtime;
  private final double cpus;
  private final long memoryBytes;
  private final Map<SandboxLimit, Long> limits;
  private final int gpus;
  private final Map<String, String> env;
  private final Map<String, Secret> secretEnv;
  private final boolean redactCredentials;
  private final NetworkPolicy network;
  private final List<Consumer<NetworkEvent>> networkListeners;
  private final @Nullable ApprovalHandler approvalHandler;
  private final ApprovalPolicy approvals;
  private final SandboxBudgets budgets;
  private final @Nullable AuditTrail auditLog;
  private final String workdir;
  private final Map<String, String> labels;
  private final Duration execTimeout;
  private final long maxOutputBytes;
  private final Duration startTimeout;
  private final Duration ttl;
  private final String user;
  private final boolean readOnlyRootFilesystem;
  private final boolean readOnlyWorkspace;
  private final @Nullable String seccompProfile;
  private final @Nullable String tenant;
  private final @Nullable RemoteServer remote;

  private SandboxConfig(Builder b) {
    // 'runtime: microvm' is how users ask for a VM boundary; it is its own backend, not an OCI
    // runtime of Docker's, so it moves the default backend with it.
    this.backend = MICROVM.equals(b.runtime) && b.backend.equals("docker") ? MICROVM : b.backend;
    this.image = b.image;
    this.runtime = b.runtime;
    this.cpus = b.cpus;
    this.memoryBytes = b.memoryBytes;
    this.limits = SandboxLimit.frozen(b.limits);
    this.gpus = b.gpus;
    this.env = Map.copyOf(b.env);
    this.secretEnv = Map.copyOf(b.secretEnv);
    this.redactCredentials = b.redactCredentials;
    this.network = b.network;
    this.networkListeners = List.copyOf(b.networkListeners);
    this.approvalHandler = b.approvalHandler;
    this.approvals = b.approvals;
    this.budgets = b.budgets;
    this.auditLog = b.auditLog;
    this.workdir = b.workdir;
    this.labels = Map.copyOf(b.labels);
    this.execTimeout = b.execTimeout;
    this.maxOutputBytes = b.maxOutputBytes;
    this.startTimeout = b.startTimeout;
    this.ttl = b.ttl;
    this.user = b.user;
    this.readOnlyRootFilesystem = b.readOnlyRootFilesystem;
    this.readOnlyWorkspace = b.readOnlyWorkspace;
    this.seccompProfile = b.seccompProfile;
    this.tenant = b.tenant;
    this.remote = b.remote;
  }

  /** The defaults: Docker, {@value #DEFAULT_IMAGE}, hardened, no network. */
  public static SandboxConfig defaults() {
    return builder().build();
  }

  /**
   * A builder that starts from preset {@code name} ({@code data}, {@code browser}, {@code gpu}, or
   * one of the user's under {@code $AGENTNEST_HOME/presets/}; see {@code
   * io.agentnest.config.Presets}): its image and limits, which the builder's calls then change like
   * any other.
   *
   * @throws ConfigException for an unknown preset, naming the known ones
   */
  public static Builder preset(String name) {
    return SandboxRuntimes.get().preset(name);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder pre-filled with this configuration. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.backend = backend;
    b.image = image;
    b.runtime = runtime;
    b.cpus = cpus;
    b.memoryBytes = memoryBytes;
    b.limits.putAll(limits);
    b.gpus = gpus;
    b.env.putAll(env);
    b.secretEnv.putAll(secretEnv);
    b.redactCredentials = redactCredentials;
    b.network = network;
    b.networkListeners.addAll(networkListeners);
    b.approvalHandler = approvalHandler;
    b.approvals = approvals;
    b.budgets = budgets;
    b.auditLog = auditLog;
    b.workdir = workdir;
    b.labels.putAll(labels);
    b.execTimeout = execTimeout;
    b.maxOutputBytes = maxOutputBytes;
    b.startTimeout = startTimeout;
    b.ttl = ttl;
    b.user = user;
    b.readOnlyRootFilesystem = readOnlyRootFilesystem;
    b.readOnlyWorkspace = readOnlyWorkspace;
    b.seccompProfile = seccompProfile;
    b.tenant = tenant;
    b.remote = remote;
    return b;
  }

  public String backend() {
    return backend;
  }

  public String image() {
    return image;
  }

  /** OCI runtime name ({@code runc}, {@code gvisor}/{@code runsc}, ...) or null for the default. */
  public @Nullable String runtime() {
    return runtime;
  }

  public double cpus() {
    return cpus;
  }

  public long memoryBytes() {
    return memoryBytes;
  }

  public long pidsLimit() {
    return limit(SandboxLimit.PIDS);
  }

  /** The value of one of the whole-number limits ({@link SandboxLimit}). */
  public long limit(SandboxLimit limit) {
    return limits.getOrDefault(limit, limit.byDefault());
  }

  /** Every whole-number limit with its value, in the table's order. */
  public Map<SandboxLimit, Long> limits() {
    return limits;
  }

  /** NVIDIA GPUs the sandbox gets (0: none); see {@link Builder#gpus}. */
  public int gpus() {
    return gpus;
  }

  public long tmpSizeBytes() {
    return limit(SandboxLimit.TMP_SIZE);
  }

  public long workspaceSizeBytes() {
    return limit(SandboxLimit.WORKSPACE_SIZE);
  }

  public Map<String, String> env() {
    return env;
  }

  /** Secret environment variables: set in the sandbox, masked in everything coming out. */
  public Map<String, Secret> secretEnv() {
    return secretEnv;
  }

  /** What the sandbox may reach; {@link NetworkPolicy#none()} by default. */
  public NetworkPolicy network() {
    return network;
  }

  /** Receivers of every connection attempt (allowed, denied, approved). */
  public List<Consumer<NetworkEvent>> networkListeners() {
    return networkListeners;
  }

  /** Who decides operations that need a person (e.g. hosts not on the allowlist in ASK mode). */
  public @Nullable ApprovalHandler approvalHandler() {
    return approvalHandler;
  }

  /** Which operations need approval or are refused; {@link ApprovalPolicy#none()} by default. */
  public ApprovalPolicy approvals() {
    return approvals;
  }

  /** What host work the sandbox may cause (egress tunnels, approval questions). */
  public SandboxBudgets budgets() {
    return budgets;
  }

  /** The audit log events go to, or null for the default one under {@code AGENTNEST_HOME}. */
  public @Nullable AuditTrail auditLog() {
    return auditLog;
  }

  /** Whether well-known credential shapes (cloud keys, tokens, JWTs, ...) are masked too. */
  public boolean redactCredentials() {
    return redactCredentials;
  }

  public String workdir() {
    return workdir;
  }

  public Map<String, String> labels() {
    return labels;
  }

  /**
   * The tenant the sandbox belongs to on a multi-tenant backend (Kubernetes: its namespace); null:
   * the backend's default tenant. Docker ignores it (the sandbox carries it as a label).
   */
  public @Nullable String tenant() {
    return tenant;
  }

  /**
   * The {@code agentnest serve} server sandboxes are made on, or null for the local backend. See
   * {@link Builder#remote(URI, String)}.
   */
  public @Nullable RemoteServer remote() {
    return remote;
  }

  public Duration execTimeout() {
    return execTimeout;
  }

  public long maxOutputBytes() {
    return maxOutputBytes;
  }

  public Duration startTimeout() {
    return startTimeout;
  }

  /** Lifetime of the sandbox; it is destroyed when it expires (see {@code Sandbox.extend}). */
  public Duration ttl() {
    return ttl;
  }

  public String user() {
    return user;
  }

  public boolean readOnlyRootFilesystem() {
    return readOnlyRootFilesystem;
  }

  /**
   * Whether {@code /workspace} is read-only, enforced by the kernel: no process in the sandbox, nor
   * the file API, can create, change or delete anything in it. It holds what the image has there.
   */
  public boolean readOnlyWorkspace() {
    return readOnlyWorkspace;
  }

  /** A seccomp profile (JSON) replacing AgentNest's own, or null for AgentNest's own. */
  public @Nullable String seccompProfile() {
    return seccompProfile;
  }

  static void checkEnvName(String name) {
    if (!ENV_NAME.matcher(name).matches()) {
      throw new ConfigException(
          "environment variable name '"
              + name
              + "' is invalid: use letters, digits and '_', not starting with a digit");
    }
  }

  /** Builder; {@link #build()} validates every field. */
  public static final class Builder {
    private String backend = defaultBackend();
    private String image = DEFAULT_IMAGE;
    private @Nullable String runtime;
    private double cpus = 1.0;
    private long memoryBytes = 512L << 20;
    private final EnumMap<SandboxLimit, Long> limits = SandboxLimit.defaults();
    private int gpus;
    private final Map<String, String> env = new LinkedHashMap<>();
    private final Map<String, Secret> secretEnv = new LinkedHashMap<>();
    private boolean redactCredentials = true;
    private NetworkPolicy network = NetworkPolicy.none();
    private final List<Consumer<NetworkEvent>> networkListeners = new ArrayList<>();
    private @Nullable ApprovalHandler approvalHandler;
    private ApprovalPolicy approvals = ApprovalPolicy.none();
    private SandboxBudgets budgets = SandboxBudgets.defaults();
    private @Nullable AuditTrail auditLog;
    private String workdir = WORKSPACE;
    private final Map<String, String> labels = new LinkedHashMap<>();
    private Duration execTimeout = Duration.ofSeconds(60);
    private long maxOutputBytes = 10L << 20;
    private Duration startTimeout = Duration.ofSeconds(30);
    private Duration ttl = Duration.ofMinutes(30);
    private String user = "65534:65534";
    private boolean readOnlyRootFilesystem = true;
    private boolean readOnlyWorkspace;
    private @Nullable String seccompProfile;
    private @Nullable String tenant;
    private @Nullable RemoteServer remote;

    private Builder() {}

    /**
     * Makes sandboxes on an {@code agentnest serve} server instead of the local engine: {@code
     * Sandbox.create} then returns a sandbox that talks to the server (runCode, exec, files,
     * extend, destroy; operations the HTTP API does not carry yet fail with {@link
     * UnsupportedControlException} naming them). The server's and the tenant's policy apply on the
     * server side. With AGENTNEST_URL and AGENTNEST_API_KEY set, every configuration goes to that
     * server without this call ({@code backend} defaults to {@code remote}).
     */
    public Builder remote(URI url, String apiKey) {
      this.remote = new RemoteServer(url, Secret.of(apiKey));
      return this;
    }

    /** Like {@link #remote(URI, String)}; null goes back to the local backend. */
    public Builder remote(@Nullable RemoteServer server) {
      this.remote = server;
      return this;
    }

    /**
     * {@code remote} when this process names an {@code agentnest serve} server (AGENTNEST_URL, or
     * the system property {@code agentnest.url}), so that every tool built on the API (the MCP
     * server, the LangChain4j and Spring AI tools) goes to it unchanged; {@code docker} otherwise.
     */
    private static String defaultBackend() {
      String url = System.getenv(RemoteServer.ENV_URL);
      if (url == null || url.isBlank()) {
        url = System.getProperty("agentnest.url");
      }
      return url == null || url.isBlank() ? "docker" : "remote";
    }

    /**
     * Backend name as registered through the {@code RuntimeBackend} SPI; default {@code docker}
     * ({@code remote} when AGENTNEST_URL names a server).
     */
    public Builder backend(String backend) {
      this.backend = Objects.requireNonNull(backend, "backend");
      return this;
    }

    public Builder image(String image) {
      this.image = Objects.requireNonNull(image, "image");
      return this;
    }

    /**
     * OCI runtime: {@code runc}, {@code gvisor} (alias of {@code runsc}), or any registered one;
     * {@code microvm} runs the sandbox as a virtual machine (the microvm backend).
     */
    public Builder runtime(@Nullable String runtime) {
      this.runtime = runtime;
      return this;
    }

    public Builder cpus(double cpus) {
      this.cpus = cpus;
      return this;
    }

    public Builder memoryBytes(long bytes) {
      this.memoryBytes = bytes;
      return this;
    }

    /** Memory limit as a size such as {@code 512m} or {@code 2g}. */
    public Builder memory(String size) {
      this.memoryBytes = Sizes.parse("memory", size);
      return this;
    }

    public Builder pidsLimit(long pids) {
      return limit(SandboxLimit.PIDS, pids);
    }

    /**
     * Sets one of the sandbox's whole-number limits, e.g. {@code limit(SandboxLimit.OPEN_FILES,
     * 1024)}; {@link #build()} checks it against the limit's range.
     */
    public Builder limit(SandboxLimit limit, long value) {
      limits.put(Objects.requireNonNull(limit, "limit"), value);
      return this;
    }

    /**
     * NVIDIA GPUs for the sandbox (Docker device requests, driver nvidia, capability gpu). With no
     * GPU or no NVIDIA runtime on the engine, creating the sandbox fails with {@link
     * UnsupportedControlException}: a GPU sandbox never runs on the CPU silently.
     */
    public Builder gpus(int n) {
      this.gpus = n;
      return this;
    }

    public Builder tmpSizeBytes(long bytes) {
      return limit(SandboxLimit.TMP_SIZE, bytes);
    }

    public Builder workspaceSizeBytes(long bytes) {
      return limit(SandboxLimit.WORKSPACE_SIZE, bytes);
    }

    public Builder env(String name, String value) {
      env.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    public Builder env(Map<String, String> values) {
      values.forEach(this::env);
      return this;
    }

    /** Removes every plain environment variable set so far. */
    public Builder clearEnv() {
      env.clear();
      return this;
    }

    /** Removes every secret environment variable set so far. */
    public Builder clearSecretEnv() {
      secretEnv.clear();
      return this;
    }

    /**
     * A secret environment variable: its value is available to code in the sandbox, and masked
     * (also base64/hex/URL-encoded, also split across chunks) in everything that comes out.
     */
    public Builder secretEnv(String name, Secret value) {
      secretEnv.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Network egress: denied by default; {@code NetworkPolicy.allowlist("pypi.org",
     * "*.pythonhosted.org")} lets code reach exactly those through the host's proxy.
     */
    public Builder network(NetworkPolicy policy) {
      this.network = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** The network policy set so far (for layering configuration sources). */
    public NetworkPolicy currentNetwork() {
      return network;
    }

    /** Receives every connection attempt of the sandbox (on a proxy thread: keep it quick). */
    public Builder onNetworkEvent(Consumer<NetworkEvent> listener) {
      networkListeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * Sends this sandbox's audit events to {@code log} (an {@code io.agentnest.audit.AuditLog})
     * instead of the default log.
     */
    public Builder auditLog(@Nullable AuditTrail log) {
      this.auditLog = log;
      return this;
    }

    /** Decides operations that need approval; without one they are denied. */
    public Builder approvalHandler(@Nullable ApprovalHandler handler) {
      this.approvalHandler = handler;
      return this;
    }

    /** Which operations need approval (file deletion, system changes, shell and Python rules). */
    public Builder approvals(ApprovalPolicy policy) {
      this.approvals = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** The approval policy set so far (for layering configuration sources). */
    public ApprovalPolicy currentApprovals() {
      return approvals;
    }

    /**
     * Host-side budgets for egress tunnels and approval questions (default {@link
     * SandboxBudgets#defaults()}): over budget the host refuses, and destroys a sandbox that keeps
     * pressing.
     */
    public Builder budgets(SandboxBudgets budgets) {
      this.budgets = Objects.requireNonNull(budgets, "budgets");
      return this;
    }

    /** The budgets set so far (for layering configuration sources). */
    public SandboxBudgets currentBudgets() {
      return budgets;
    }

    /** Turns masking of well-known credential shapes off (secrets are always masked). */
    public Builder redactCredentials(boolean on) {
      this.redactCredentials = on;
      return this;
    }

    /** Default working directory of commands: absolute, or relative to the workspace. */
    public Builder workdir(String workdir) {
      this.workdir = Objects.requireNonNull(workdir, "workdir");
      return this;
    }

    /** A user label on the sandbox (keys under {@code agentnest.} are reserved). */
    public Builder label(String key, String value) {
      labels.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * The tenant on a multi-tenant backend: on Kubernetes, the sandbox runs in the tenant's
     * namespace ({@code agentnest-<tenant>}) under its quota. Lower-case letters, digits and '-';
     * null: the backend's default tenant.
     */
    public Builder tenant(@Nullable String tenant) {
      this.tenant = tenant;
      return this;
    }

    /** Default wall-time limit of each execution. */
    public Builder execTimeout(Duration timeout) {
      this.execTimeout = Objects.requireNonNull(timeout, "timeout");
      return this;
    }

    /** Default cap on stdout+stderr bytes per execution. */
    public Builder maxOutputBytes(long bytes) {
      this.maxOutputBytes = bytes;
      return this;
    }

    /** How long creating the sandbox and starting its agent may take. */
    public Builder startTimeout(Duration timeout) {
      this.startTimeout = Objects.requireNonNull(timeout, "timeout");
      return this;
    }

    /**
     * Lifetime of the sandbox (default 30 minutes). The owning process destroys it at expiry; if
     * that process dies, the sandbox's agent stops it and {@code agentnest prune} removes it.
     */
    public Builder ttl(Duration ttl) {
      this.ttl = Objects.requireNonNull(ttl, "ttl");
      return this;
    }

    /** Numeric {@code uid[:gid]} to run as; default {@code 65534:65534} (nobody). */
    public Builder user(String user) {
      this.user = Objects.requireNonNull(user, "user");
      return this;
    }

    /** Turns the read-only root filesystem off (on by default). */
    public Builder readOnlyRootFilesystem(boolean readOnly) {
      this.readOnlyRootFilesystem = readOnly;
      return this;
    }

    /**
     * Makes {@code /workspace} read-only for everything in the sandbox, enforced by the kernel (off
     * by default): it is then the image's own {@code /workspace} on the read-only root filesystem,
     * not a writable scratch space. For sandboxes that must not modify files, whatever the code
     * does; {@code /tmp} stays writable. The file API's writes, uploads and deletions fail with
     * {@code READ_ONLY}.
     */
    public Builder readOnlyWorkspace(boolean readOnly) {
      this.readOnlyWorkspace = readOnly;
      return this;
    }

    /** Replaces AgentNest's seccomp profile with the given JSON profile. */
    public Builder seccompProfile(@Nullable String json) {
      this.seccompProfile = json;
      return this;
    }

    public SandboxConfig build() {
      if (backend.isBlank()) {
        throw new ConfigException("backend is empty: use 'docker' (the default)");
      }
      if (image.isBlank() || image.chars().anyMatch(Character::isWhitespace)) {
        throw new ConfigException(
            "image '" + image + "' is invalid: use a name such as " + DEFAULT_IMAGE);
      }
      if (runtime != null && !runtime.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,63}")) {
        throw new ConfigException(
            "runtime '" + runtime + "' is invalid: use runc, gvisor, or a registered runtime name");
      }
      if (!(cpus > 0 && cpus <= 1024)) {
        throw new ConfigException("cpus must be in (0, 1024], got " + cpus + ": e.g. cpus(1.5)");
      }
      requireAtLeast("memory", memoryBytes, 16L << 20, "16m");
      limits.forEach(SandboxLimit::check);
      if (gpus < 0 || gpus > 64) {
        throw new ConfigException("gpus must be in [0, 64], got " + gpus + ": e.g. gpus(1)");
      }
      env.keySet().forEach(SandboxConfig::checkEnvName);
      for (String name : secretEnv.keySet()) {
        checkEnvName(name);
        if (env.containsKey(name)) {
          throw new ConfigException(
              "'" + name + "' is both a plain and a secret environment variable: keep one");
        }
      }
      for (String key : labels.keySet()) {
        if (!LABEL_KEY.matcher(key).matches()) {
          throw new ConfigException(
              "label key '" + key + "' is invalid: use lowercase letters, digits, '.', '-', '/'");
        }
        if (key.startsWith("agentnest.")) {
          throw new ConfigException(
              "label key '" + key + "' is reserved: keys under 'agentnest.' are set by AgentNest");
        }
      }
      if (tenant != null && !TENANT.matcher(tenant).matches()) {
        throw new ConfigException(
            "tenant '"
                + tenant
                + "' is invalid: it names a Kubernetes namespace, so use lower-case letters,"
                + " digits and '-', starting and ending with a letter or digit (at most 63), e.g."
                + " search");
      }
      if (workdir.isBlank() || workdir.contains("\0")) {
        throw new ConfigException("workdir is empty or contains NUL: use e.g. /workspace");
      }
      if (execTimeout.isNegative() || execTimeout.isZero()) {
        throw new ConfigException("execTimeout must be positive, got " + execTimeout);
      }
      if (startTimeout.isNegative() || startTimeout.isZero()) {
        throw new ConfigException("startTimeout must be positive, got " + startTimeout);
      }
      if (ttl.compareTo(Duration.ofSeconds(1)) < 0 || ttl.compareTo(Duration.ofDays(365)) > 0) {
        throw new ConfigException(
            "ttl must be between 1s and 365 days, got "
                + ttl
                + ": e.g. ttl(Duration.ofMinutes(30))");
      }
      if (maxOutputBytes < 0) {
        throw new ConfigException("maxOutputBytes must be >= 0, got " + maxOutputBytes);
      }
      if (!USER.matcher(user).matches()) {
        throw new ConfigException(
            "user '" + user + "' is invalid: use a numeric uid[:gid] such as 65534:65534");
      }
      if (Long.parseLong(user.split(":")[0]) == 0) {
        throw new ConfigException(
            "user '" + user + "' is root: sandboxes run as a non-root user; use e.g. 1000:1000");
      }
      if (readOnlyWorkspace && !readOnlyRootFilesystem) {
        throw new ConfigException(
            "readOnlyWorkspace needs the read-only root filesystem: with a writable root,"
                + " /workspace would be writable too; keep readOnlyRootFilesystem(true)"
                + " (security.read_only_root: true)");
      }
      if (seccompProfile != null && !seccompProfile.strip().startsWith("{")) {
        throw new ConfigException(
            "seccompProfile must be a JSON seccomp profile object; to weaken it, pass a profile"
                + " that allows more, not '"
                + (seccompProfile.length() > 40 ? seccompProfile.substring(0, 40) : seccompProfile)
                + "'");
      }
      return new SandboxConfig(this);
    }

    private static void requireAtLeast(String field, long value, long min, String example) {
      if (value < min) {
        throw new ConfigException(
            field + " must be at least " + example + " (" + min + " bytes), got " + value);
      }
    }
  }
}
