package io.agentnest.docker.internal;

import com.github.dockerjava.api.model.Info;
import io.agentnest.spi.HealthCheck;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How the Docker daemon runs gVisor: runsc's path and the arguments the daemon adds. Whether the
 * sandbox's seccomp profile applies inside gVisor depends on one of them, {@code --oci-seccomp}:
 * without it the Sentry filters only its own host system calls.
 */
public record RunscRegistration(String path, List<String> args) {
  public static final String OCI_SECCOMP = "--oci-seccomp";

  public RunscRegistration {
    args = List.copyOf(args);
  }

  /**
   * The daemon's {@code runsc} entry, if registered. docker-java maps a runtime to its path only,
   * so the arguments are read from the raw answer of {@code docker info}.
   */
  public static Optional<RunscRegistration> of(Info info) {
    return info.getRawValues().get("Runtimes") instanceof Map<?, ?> raw
        ? of(raw)
        : Optional.empty();
  }

  /** The {@code runsc} entry of {@code docker info}'s raw {@code Runtimes} object. */
  static Optional<RunscRegistration> of(Map<?, ?> runtimes) {
    if (!(runtimes.get("runsc") instanceof Map<?, ?> fields)) {
      return Optional.empty();
    }
    List<String> args = new ArrayList<>();
    if (fields.get("runtimeArgs") instanceof List<?> list) {
      list.forEach(a -> args.add(String.valueOf(a)));
    }
    Object path = fields.get("path");
    return Optional.of(new RunscRegistration(path == null ? "runsc" : path.toString(), args));
  }

  /** Whether the daemon passes {@code --oci-seccomp} (runsc takes one or two dashes). */
  public boolean appliesOciSeccomp() {
    return args.stream()
        .anyMatch(
            a ->
                a.equals(OCI_SECCOMP)
                    || a.equals("-oci-seccomp")
                    || a.equals(OCI_SECCOMP + "=true")
                    || a.equals("-oci-seccomp=true"));
  }

  /**
   * Whether this runsc binary knows {@code --oci-seccomp} ({@code flags}: what {@code runsc flags}
   * printed); empty when the binary is not on this host or does not answer.
   */
  static Optional<Boolean> binaryHasOciSeccomp(Optional<String> flags) {
    return flags.map(f -> f.contains("-oci-seccomp"));
  }

  /**
   * The doctor's lines about this registration, seccomp and platform, from one {@code runsc flags}
   * (each check on its own would run it).
   */
  public List<HealthCheck> checks() {
    Optional<String> flags = flags();
    return List.of(check(() -> flags), platformCheck(flags));
  }

  /** What {@code runsc flags} prints; empty when the binary is not here or does not answer. */
  private Optional<String> flags() {
    Path bin = Path.of(path);
    if (!bin.isAbsolute() || !Files.isExecutable(bin)) {
      return Optional.empty();
    }
    try {
      Process p = new ProcessBuilder(path, "flags").redirectErrorStream(true).start();
      byte[] out = p.getInputStream().readNBytes(1 << 20);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return Optional.empty();
      }
      return Optional.of(new String(out, StandardCharsets.UTF_8));
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private static final Pattern PLATFORM_ARG = Pattern.compile("--?platform=(\\w+)");

  // runsc flags: "-platform string\n    \tspecifies which platform to use: ... (default "systrap")"
  private static final Pattern DEFAULT_PLATFORM =
      Pattern.compile("-platform string[ \\t]*\\r?\\n[^\\n]*\\(default \"(\\w+)\"\\)");

  /**
   * The gVisor platform sandboxes run on: the daemon's {@code --platform} argument, else the
   * default {@code flags} (what {@code runsc flags} prints) names; empty when neither says.
   */
  Optional<String> platform(Optional<String> flags) {
    for (String a : args) {
      Matcher m = PLATFORM_ARG.matcher(a);
      if (m.matches()) {
        return Optional.of(m.group(1));
      }
    }
    return flags.map(DEFAULT_PLATFORM::matcher).filter(Matcher::find).map(m -> m.group(1));
  }

  /**
   * The doctor's line about gVisor's platform. On ptrace (the default before runsc 2023, Debian
   * 12's own runsc 20221219) every system call in a sandbox is a ptrace stop of the Sentry, about
   * twice what it costs on systrap on this project's test machines: slower starts and hand-outs,
   * same isolation.
   */
  HealthCheck platformCheck(Optional<String> flags) {
    String name = "gVisor platform";
    Optional<String> platform = platform(flags);
    if (platform.isEmpty()) {
      return HealthCheck.warn(
          name,
          "cannot tell which platform runsc (" + path + ") uses: 'runsc flags' did not say",
          "check that " + path + " runs: " + path + " flags");
    }
    if (platform.get().equals("ptrace")) {
      return HealthCheck.warn(
          name,
          "ptrace: every system call in a gVisor sandbox stops the Sentry through ptrace, about"
              + " twice the cost of the systrap platform (slower starts and pooled hand-outs,"
              + " same isolation)",
          "use a runsc from 2023 or later, whose default is systrap; on Debian 12"
              + " scripts/setup-host.sh installs runsc from bookworm-backports");
    }
    return HealthCheck.ok(name, platform.get());
  }

  /** The doctor's line about seccomp inside gVisor. */
  public HealthCheck check() {
    return check(this::flags);
  }

  /** {@code flags} is only asked when the registration does not apply the profile. */
  HealthCheck check(Supplier<Optional<String>> flags) {
    String name = "gVisor seccomp";
    if (appliesOciSeccomp()) {
      return HealthCheck.ok(
          name, "runsc runs with " + OCI_SECCOMP + ": the sandbox's profile applies in the Sentry");
    }
    Optional<Boolean> has = binaryHasOciSeccomp(flags.get());
    if (has.isPresent() && !has.get()) {
      return HealthCheck.warn(
          name,
          "this runsc ("
              + path
              + ") cannot apply OCI seccomp profiles: gVisor sandboxes are"
              + " isolated by the Sentry alone, AgentNest's profile does not apply in them",
          "install a runsc that has " + OCI_SECCOMP + ", then run scripts/setup-host.sh");
    }
    return HealthCheck.warn(
        name,
        "runsc is registered without "
            + OCI_SECCOMP
            + ": AgentNest's seccomp profile does not"
            + " apply inside gVisor sandboxes (the Sentry is the only filter)",
        "run scripts/setup-host.sh, or add \""
            + OCI_SECCOMP
            + "\" to runsc's runtimeArgs in"
            + " /etc/docker/daemon.json and reload the daemon: kill -HUP $(pidof dockerd)");
  }
}
