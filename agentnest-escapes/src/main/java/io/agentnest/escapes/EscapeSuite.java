package io.agentnest.escapes;

import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.escapes.internal.Catalogue;
import io.agentnest.escapes.internal.Judgement;
import io.agentnest.escapes.internal.ProbeContext;
import io.agentnest.escapes.internal.Verdicts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Tries to break out of real sandboxes: privilege, namespaces and mounts, devices, kernel
 * interfaces, host information, network, resources, the file API, secrets and the host's git
 * operations on a repository sandbox code prepared. Every probe is a small hostile program (or a
 * hostile use of the host API) whose safe outcome is asserted.
 *
 * <pre>{@code
 * EscapeReport report = EscapeSuite.builder().runtime("gvisor").build().run();
 * System.out.print(report.table(80));
 * if (!report.passed()) System.exit(1);
 * }</pre>
 */
public final class EscapeSuite {
  private final SandboxConfig base;
  private final List<String> only;
  private final Consumer<ProbeResult> onResult;
  private final List<String> engineRoots;

  private EscapeSuite(Builder b) {
    this.base = b.base.toBuilder().runtime(b.runtime).build();
    this.only = List.copyOf(b.only);
    this.onResult = b.onResult;
    this.engineRoots = List.copyOf(b.engineRoots);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Every probe of the suite, in the order it runs them. */
  public static List<Probe> probes() {
    return Catalogue.all().stream().map(EscapeSuite::probe).toList();
  }

  /** The probes this suite runs (all, or those {@code only} selected). */
  public List<Probe> selected() {
    return probes().stream().filter(p -> selected(p.id())).toList();
  }

  /** The backend name a config runs on: its runtime with the gVisor alias resolved. */
  public static String backendOf(SandboxConfig config) {
    if (config.backend().equals(SandboxConfig.MICROVM)) {
      return SandboxConfig.MICROVM;
    }
    String r = config.runtime();
    if (r == null || r.isBlank()) {
      return "runc";
    }
    return r.equals("gvisor") ? "runsc" : r;
  }

  /**
   * Runs the probes and returns what happened. Sandboxes it starts are destroyed before it returns.
   *
   * @throws AgentNestException when the sandboxes cannot be started at all (no engine, unknown
   *     runtime); a probe that breaks is an {@link Outcome#ERROR} result instead
   */
  public EscapeReport run() {
    String backend = backendOf(base);
    List<ProbeResult> results = new ArrayList<>();
    try (ProbeContext ctx = new ProbeContext(base, backend, engineRoots)) {
      for (Catalogue.Entry e : Catalogue.all()) {
        if (!selected(e.id())) {
          continue;
        }
        ProbeResult r = runOne(ctx, e);
        results.add(r);
        onResult.accept(r);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new EscapeReport(results);
  }

  private boolean selected(String id) {
    return only.isEmpty() || only.stream().anyMatch(p -> id.equals(p) || id.startsWith(p + "."));
  }

  private static Probe probe(Catalogue.Entry e) {
    return new Probe(e.id(), e.attack(), e.harmlessOn());
  }

  private static ProbeResult runOne(ProbeContext ctx, Catalogue.Entry e) {
    Probe p = probe(e);
    long t0 = System.nanoTime();
    Outcome outcome;
    String detail;
    try {
      Judgement j = e.body().apply(ctx);
      detail = Verdicts.clean(j.detail());
      if (!j.through()) {
        outcome = Outcome.BLOCKED;
      } else if (p.harmlessOn().containsKey(ctx.backend())) {
        outcome = Outcome.CONTAINED;
        detail = p.harmlessOn().get(ctx.backend()) + " [saw: " + detail + "]";
      } else {
        outcome = Outcome.ESCAPED;
      }
    } catch (RuntimeException ex) {
      outcome = Outcome.ERROR;
      detail = Verdicts.clean(ex.getClass().getSimpleName() + ": " + ex.getMessage());
    }
    return new ProbeResult(
        p.id(),
        p.category(),
        ctx.backend(),
        outcome,
        detail,
        Duration.ofNanos(System.nanoTime() - t0));
  }

  /** Configures a suite run; {@link #build()} validates. */
  public static final class Builder {
    private SandboxConfig base = SandboxConfig.defaults();
    private @Nullable String runtime;
    private final List<String> only = new ArrayList<>();
    private Consumer<ProbeResult> onResult = r -> {};
    private List<String> engineRoots = List.of("/var/lib/docker");

    private Builder() {}

    /** The sandbox configuration to attack (default: the defaults every user gets). */
    public Builder base(SandboxConfig config) {
      this.base = Objects.requireNonNull(config, "config");
      return this;
    }

    /** OCI runtime: {@code runc}, {@code gvisor} or any runtime registered in Docker. */
    public Builder runtime(@Nullable String runtime) {
      this.runtime = runtime;
      return this;
    }

    /** Runs only these probes or categories ({@code kernel}, {@code files.tar-slip}). */
    public Builder only(List<String> idsOrCategories) {
      only.addAll(idsOrCategories);
      return this;
    }

    /** Called after each probe, for progress. */
    public Builder onResult(Consumer<ProbeResult> listener) {
      this.onResult = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Where the engine keeps its storage; paths under it in mountinfo name no user data. */
    public Builder engineRoot(String path) {
      return engineRoots(List.of(Objects.requireNonNull(path, "path")));
    }

    /**
     * Where the engine keeps its storage when that is several places, e.g. containerd's root and
     * the kubelet's (which mounts each pod's /etc/hosts and termination log from its own tree).
     */
    public Builder engineRoots(List<String> paths) {
      if (paths.isEmpty()) {
        throw new ConfigException("engine roots: give at least one, e.g. /var/lib/docker");
      }
      this.engineRoots = List.copyOf(paths);
      return this;
    }

    public EscapeSuite build() {
      List<String> known = probes().stream().map(Probe::id).toList();
      for (String o : only) {
        boolean matches = known.stream().anyMatch(id -> id.equals(o) || id.startsWith(o + "."));
        if (!matches) {
          throw new ConfigException(
              "no probe or category '"
                  + o
                  + "': use one of the categories privilege, namespaces, devices, kernel,"
                  + " host-info, network, files, secrets, git, resources, or a probe id from"
                  + " 'agentnest doctor --escapes --list'");
        }
      }
      for (String root : engineRoots) {
        if (!root.startsWith("/")) {
          throw new ConfigException(
              "engine root '" + root + "' must be an absolute path, e.g. /var/lib/docker");
        }
      }
      return new EscapeSuite(this);
    }
  }
}
