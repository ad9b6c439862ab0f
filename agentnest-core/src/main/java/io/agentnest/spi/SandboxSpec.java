package io.agentnest.spi;

import io.agentnest.UnsupportedControlException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * What the policy layer asks a backend to create. Every field is a control the backend must enforce
 * or refuse.
 *
 * <p>Build one with {@link #builder()} (or change one with {@link #toBuilder()}): it starts
 * hardened (read-only root, no new privileges, no capabilities, no network, a non-root user) and
 * its {@link Builder#build()} refuses a spec no backend could run, naming the field and the fix.
 *
 * @param image image reference
 * @param runtime OCI runtime name, or null for the backend's default
 * @param command the main process (the agent bootstrap)
 * @param user numeric uid:gid
 * @param env environment of the main process
 * @param workdir working directory of the main process
 * @param labels management and user labels
 * @param cpus CPU limit in cores
 * @param memoryBytes memory limit (swap included)
 * @param pidsLimit maximum number of processes
 * @param tmpfs size-limited tmpfs mounts: path to size in bytes
 * @param readOnlyRootFilesystem mount the root filesystem read-only
 * @param seccompProfileJson seccomp profile to apply
 * @param noNewPrivileges set no_new_privs
 * @param dropAllCapabilities drop every Linux capability
 * @param networkDisabled no network interface but loopback
 * @param openFilesLimit per-process limit of open files
 * @param gpus NVIDIA GPUs the sandbox needs (0: none); a backend that cannot give them refuses
 * @param cpuShares relative CPU weight under contention (0: the engine's default); a hint, not a
 *     control: a backend without one ignores it
 */
public record SandboxSpec(
    String image,
    @Nullable String runtime,
    List<String> command,
    String user,
    Map<String, String> env,
    String workdir,
    Map<String, String> labels,
    double cpus,
    long memoryBytes,
    long pidsLimit,
    Map<String, Long> tmpfs,
    boolean readOnlyRootFilesystem,
    String seccompProfileJson,
    boolean noNewPrivileges,
    boolean dropAllCapabilities,
    boolean networkDisabled,
    long openFilesLimit,
    int gpus,
    int cpuShares) {
  /** The weight of a sandbox whose spec leaves {@code cpuShares} at 0 (Docker's, cgroup v1's). */
  public static final int DEFAULT_CPU_SHARES = 1024;

  /** The highest CPU weight a spec may ask for (the kernel's cgroup v1 maximum). */
  public static final int MAX_CPU_SHARES = 262_144;

  public SandboxSpec {
    command = List.copyOf(command);
    env = Map.copyOf(env);
    labels = Map.copyOf(labels);
    tmpfs = Map.copyOf(tmpfs);
  }

  /** The non-root user a built spec runs as unless {@link Builder#user} says otherwise. */
  public static final String NOBODY = "65534:65534";

  private static final Pattern USER = Pattern.compile("[0-9]{1,10}(:[0-9]{1,10})?");

  /**
   * A builder that starts hardened: read-only root, no new privileges, all capabilities dropped, no
   * network, user {@value #NOBODY}, working directory {@code /}, no env, labels or tmpfs. Image,
   * command, the limits and the seccomp profile have no default: {@link Builder#build()} names any
   * that is missing.
   */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding every field of this spec, to derive a changed copy. */
  public Builder toBuilder() {
    return builder()
        .image(image)
        .runtime(runtime)
        .command(command)
        .user(user)
        .env(env)
        .workdir(workdir)
        .labels(labels)
        .cpus(cpus)
        .memoryBytes(memoryBytes)
        .pidsLimit(pidsLimit)
        .tmpfs(tmpfs)
        .readOnlyRootFilesystem(readOnlyRootFilesystem)
        .seccompProfileJson(seccompProfileJson)
        .noNewPrivileges(noNewPrivileges)
        .dropAllCapabilities(dropAllCapabilities)
        .networkDisabled(networkDisabled)
        .openFilesLimit(openFilesLimit)
        .gpus(gpus)
        .cpuShares(cpuShares);
  }

  /**
   * Refuses a spec that asks for GPUs on a backend that has no way to give them: a GPU sandbox
   * never runs on the CPU silently.
   */
  public void refuseGpus(String backend) {
    if (gpus > 0) {
      throw new UnsupportedControlException(
          "the sandbox asks for "
              + gpus
              + " GPU(s) (gpus / the gpu preset), which the "
              + backend
              + " backend cannot provide; use the docker backend on a host with an NVIDIA GPU and"
              + " the NVIDIA Container Toolkit ('agentnest doctor' checks it)");
    }
  }

  /**
   * Refuses this spec where it weakens a control every backend must enforce: backends only know how
   * to run sandboxes hardened, and say so in the same words.
   *
   * @param backend the refusing backend's name, for the message
   */
  public void requireHardened(String backend) {
    List<String> weakened = new ArrayList<>();
    if (!networkDisabled) {
      weakened.add("network (it must be 'none')");
    }
    if (!dropAllCapabilities) {
      weakened.add("capabilities (all must be dropped)");
    }
    if (!noNewPrivileges) {
      weakened.add("no-new-privileges (it must be set)");
    }
    if (!weakened.isEmpty()) {
      throw new UnsupportedControlException(
          "the "
              + backend
              + " backend cannot run a sandbox with these controls weakened: "
              + String.join(", ", weakened)
              + "; remove the override, it enforces all of them");
    }
  }

  /**
   * Collects the fields of a {@link SandboxSpec}; {@link #build()} validates them all and returns
   * an immutable spec. A builder is not thread-safe; the spec it builds is.
   */
  public static final class Builder {
    private @Nullable String image;
    private @Nullable String runtime;
    private List<String> command = List.of();
    private String user = NOBODY;
    private final Map<String, String> env = new LinkedHashMap<>();
    private String workdir = "/";
    private final Map<String, String> labels = new LinkedHashMap<>();
    private double cpus;
    private long memoryBytes;
    private long pidsLimit;
    private final Map<String, Long> tmpfs = new LinkedHashMap<>();
    private boolean readOnlyRootFilesystem = true;
    private @Nullable String seccompProfileJson;
    private boolean noNewPrivileges = true;
    private boolean dropAllCapabilities = true;
    private boolean networkDisabled = true;
    private long openFilesLimit;
    private int gpus;
    private int cpuShares;

    private Builder() {}

    /**
     * Relative CPU weight under contention, in [2, {@value SandboxSpec#MAX_CPU_SHARES}] (Docker's
     * {@code --cpu-shares}; 1024 is the usual default); 0, the default, leaves the engine's.
     */
    public Builder cpuShares(int shares) {
      this.cpuShares = shares;
      return this;
    }

    /** NVIDIA GPUs the sandbox needs (0, the default: none). */
    public Builder gpus(int gpus) {
      this.gpus = gpus;
      return this;
    }

    // Setters only store: build() validates every field (a null from unchecked code included).

    public Builder image(String image) {
      this.image = image;
      return this;
    }

    public Builder command(List<String> command) {
      this.command = List.copyOf(command);
      return this;
    }

    public Builder command(String... command) {
      return command(List.of(command));
    }

    /** A numeric uid[:gid], never root; default {@value #NOBODY}. */
    public Builder user(String user) {
      this.user = user;
      return this;
    }

    /** An absolute path; default {@code /}. */
    public Builder workdir(String workdir) {
      this.workdir = workdir;
      return this;
    }

    /** Replaces the environment of the main process. */
    public Builder env(Map<String, String> env) {
      return replace(this.env, env);
    }

    /** The OCI runtime name, or null for the backend's default. */
    public Builder runtime(@Nullable String runtime) {
      this.runtime = runtime;
      return this;
    }

    /** Replaces the labels. */
    public Builder labels(Map<String, String> labels) {
      return replace(this.labels, labels);
    }

    /** Replaces the tmpfs mounts: absolute path to size in bytes. */
    public Builder tmpfs(Map<String, Long> tmpfs) {
      return replace(this.tmpfs, tmpfs);
    }

    /** CPU limit in cores, in (0, 1024]. */
    public Builder cpus(double cores) {
      this.cpus = cores;
      return this;
    }

    /** Memory limit in bytes, swap included. */
    public Builder memoryBytes(long limit) {
      this.memoryBytes = limit;
      return this;
    }

    /** Maximum number of processes. */
    public Builder pidsLimit(long limit) {
      this.pidsLimit = limit;
      return this;
    }

    /** Per-process limit of open files. */
    public Builder openFilesLimit(long limit) {
      this.openFilesLimit = limit;
      return this;
    }

    /** The seccomp profile, a JSON object. */
    public Builder seccompProfileJson(String json) {
      this.seccompProfileJson = json;
      return this;
    }

    /** Default true. */
    public Builder readOnlyRootFilesystem(boolean on) {
      this.readOnlyRootFilesystem = on;
      return this;
    }

    /** Default true; false weakens a control every backend refuses ({@link #requireHardened}). */
    public Builder noNewPrivileges(boolean on) {
      this.noNewPrivileges = on;
      return this;
    }

    /** Default true; false weakens a control every backend refuses. */
    public Builder dropAllCapabilities(boolean on) {
      this.dropAllCapabilities = on;
      return this;
    }

    /** Default true; false weakens a control every backend refuses. */
    public Builder networkDisabled(boolean on) {
      this.networkDisabled = on;
      return this;
    }

    private <V> Builder replace(Map<String, V> field, Map<String, V> values) {
      field.clear();
      field.putAll(values);
      return this;
    }

    /**
     * Validates every field and returns the spec.
     *
     * @throws IllegalArgumentException naming the first field that is missing or invalid, and the
     *     fix
     */
    public SandboxSpec build() {
      String img = image;
      if (img == null || img.isBlank() || img.chars().anyMatch(Character::isWhitespace)) {
        throw invalid("image", image, "set an image name such as agentnest/python:latest");
      }
      if (command.isEmpty() || command.stream().anyMatch(a -> a.indexOf('\0') >= 0)) {
        throw invalid("command", command, "set the main process, e.g. command(\"python3\", ...)");
      }
      if (user == null
          || !USER.matcher(user).matches()
          || Long.parseLong(user.split(":")[0]) == 0) {
        throw invalid("user", user, "use a numeric non-root uid[:gid] such as " + NOBODY);
      }
      if (workdir == null || !workdir.startsWith("/") || workdir.indexOf('\0') >= 0) {
        throw invalid("workdir", workdir, "use an absolute path such as /workspace");
      }
      if (!(cpus > 0 && cpus <= 1024)) {
        throw invalid("cpus", cpus, "set a limit in (0, 1024] cores, e.g. cpus(1.0)");
      }
      requirePositive("memoryBytes", memoryBytes);
      requirePositive("pidsLimit", pidsLimit);
      requirePositive("openFilesLimit", openFilesLimit);
      if (gpus < 0 || gpus > 64) {
        throw invalid("gpus", gpus, "ask for 0 to 64 GPUs");
      }
      if (cpuShares != 0 && (cpuShares < 2 || cpuShares > MAX_CPU_SHARES)) {
        throw invalid(
            "cpuShares", cpuShares, "give 0 (the engine's default) or 2 to " + MAX_CPU_SHARES);
      }
      tmpfs.forEach(
          (path, size) -> {
            if (!path.startsWith("/") || path.indexOf('\0') >= 0) {
              throw invalid("tmpfs path", path, "mount tmpfs at an absolute path such as /tmp");
            }
            if (size <= 0) {
              throw invalid("tmpfs size of " + path, size, "give it a positive size in bytes");
            }
          });
      String seccomp = seccompProfileJson;
      if (seccomp == null || !seccomp.strip().startsWith("{")) {
        throw invalid(
            "seccompProfileJson",
            seccomp == null ? null : "(not a JSON object)",
            "pass a JSON seccomp profile object");
      }
      return new SandboxSpec(
          img,
          runtime,
          command,
          user,
          env,
          workdir,
          labels,
          cpus,
          memoryBytes,
          pidsLimit,
          tmpfs,
          readOnlyRootFilesystem,
          seccomp,
          noNewPrivileges,
          dropAllCapabilities,
          networkDisabled,
          openFilesLimit,
          gpus,
          cpuShares);
    }

    private static void requirePositive(String field, long value) {
      if (value <= 0) {
        throw invalid(field, value, "set a positive limit");
      }
    }

    private static IllegalArgumentException invalid(
        String field, @Nullable Object value, String fix) {
      return new IllegalArgumentException(
          "sandbox spec "
              + field
              + (value == null ? " is missing" : " '" + value + "' is invalid")
              + ": "
              + fix);
    }
  }
}
