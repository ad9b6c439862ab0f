package io.agentnest.cli;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ConfigException;
import io.agentnest.NetworkPolicy;
import io.agentnest.PoolOptions;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.Sizes;
import io.agentnest.audit.AuditLog;
import io.agentnest.config.AgentNestConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Sandbox options shared by commands that create one: the configuration file's settings ({@code
 * --config}, {@code --profile}, see {@link AgentNestConfig}), then the flags given explicitly
 * ({@code --backend}, {@code --tenant}, limits, ...).
 */
final class SandboxOptions {
  static {
    // --limit's help lists the names from the limits' own table (picocli reads ${sys:...} late).
    System.setProperty("agentnest.limits", SandboxLimit.keys());
  }

  @Mixin BackendOptions target = new BackendOptions();

  @Option(
      names = "--preset",
      paramLabel = "NAME",
      description =
          "Start from a preset (data, browser, gpu, or one under $AGENTNEST_HOME/presets) instead"
              + " of the configuration file's settings; the flags below still apply. Build its"
              + " image first: agentnest image build --preset NAME.")
  @Nullable String preset;

  @Option(
      names = "--tenant",
      paramLabel = "NAME",
      description =
          "Tenant on Kubernetes: the sandbox runs in its namespace (agentnest-NAME) under its"
              + " quota (default: the configuration's kubernetes.tenant, else"
              + " $AGENTNEST_KUBERNETES_TENANT, else default).")
  @Nullable String tenant;

  @Option(
      names = "--image",
      description =
          "Image to run (default: from the configuration, else "
              + SandboxConfig.DEFAULT_IMAGE
              + ").")
  @Nullable String image;

  @Option(names = "--runtime", description = "OCI runtime: runc, gvisor, or a registered one.")
  @Nullable String runtime;

  @Option(names = "--memory", description = "Memory limit, e.g. 512m, 2g.")
  @Nullable String memory;

  @Option(names = "--cpus", description = "CPU limit in cores, e.g. 1.5.")
  @Nullable Double cpus;

  @Option(names = "--pids", description = "Maximum number of processes.")
  @Nullable Long pids;

  @Option(
      names = "--limit",
      paramLabel = "NAME=VALUE",
      description =
          "Set a limit by its name, as agentnest.yaml's limits: writes it; repeatable. Names:"
              + " ${sys:agentnest.limits}. E.g. --limit open_files=1024 --limit tmp_size=128m.")
  List<String> limits = new ArrayList<>();

  @Option(names = "--timeout", description = "Wall-time limit per execution, e.g. 30s, 2m, 500ms.")
  @Nullable String timeout;

  @Option(names = "--max-output", description = "Cap on output bytes per execution, e.g. 10m.")
  @Nullable String maxOutput;

  @Option(
      names = "--read-only-workspace",
      description =
          "Make /workspace read-only, enforced by the kernel: it holds what the image has there;"
              + " nothing in the sandbox can create, change or delete files in it (/tmp stays"
              + " writable).")
  boolean readOnlyWorkspace;

  @Option(
      names = "--allow",
      description =
          "Allow egress to DOMAIN[:PORT] through the host proxy (repeatable; wildcards like"
              + " *.pypi.org; default ports 80 and 443).")
  List<String> allow = new ArrayList<>();

  @Mixin ApprovalOptions approvals = new ApprovalOptions();

  /**
   * The warm pool the configuration's profile describes ({@code pool:} or {@code kubernetes:
   * pool:}), if any: a long-running command (mcp, serve) starts it with its final sandbox
   * configuration as template, so the sandboxes it creates are taken from it.
   */
  Optional<PoolOptions> poolOptions() {
    return target.file().pool(target.profile);
  }

  /** The configuration file's settings (and AGENTNEST_* overrides), then the explicit flags. */
  SandboxConfig toConfig() {
    return toConfig(OpenQuestions.NONE);
  }

  /** As {@link #toConfig()}; a terminal prompt tells {@code questions} while it asks. */
  SandboxConfig toConfig(OpenQuestions questions) {
    AgentNestConfig file = target.file();
    String profile = target.profile;
    if (file.source().isPresent()) {
      AuditLog.shared()
          .record(
              "config.loaded",
              null,
              Map.of(
                  "source",
                  file.source().get().toString(),
                  "profile",
                  profile == null ? "" : profile));
    }
    if (preset != null && profile != null) {
      throw new ConfigException(
          "--preset " + preset + " and --profile " + profile + ": give one of them, not both");
    }
    SandboxConfig.Builder b =
        preset != null ? SandboxConfig.preset(preset) : file.sandboxConfig(profile).toBuilder();
    String backend = target.name();
    b.backend(backend);
    // The backend reads its own settings (kubernetes:) from the same file and profile.
    target.open(backend);
    if (tenant != null) {
      b.tenant(tenant);
    }
    if (image != null) {
      b.image(image);
    }
    if (runtime != null) {
      b.runtime(runtime);
    }
    if (memory != null) {
      b.memory(memory);
    }
    if (cpus != null) {
      b.cpus(cpus);
    }
    if (readOnlyWorkspace) {
      b.readOnlyWorkspace(true);
    }
    if (pids != null) {
      b.pidsLimit(pids);
    }
    for (String l : limits) {
      int eq = l.indexOf('=');
      if (eq <= 0) {
        throw new ConfigException(
            "--limit '" + l + "' is not NAME=VALUE: e.g. --limit open_files=1024");
      }
      SandboxLimit limit = SandboxLimit.require(l.substring(0, eq).strip());
      b.limit(limit, limit.parse(l.substring(eq + 1)));
    }
    if (timeout != null) {
      b.execTimeout(Durations.parse("--timeout", timeout));
    }
    if (maxOutput != null) {
      b.maxOutputBytes(Sizes.parse("--max-output", maxOutput));
    }
    if (!allow.isEmpty()) {
      NetworkPolicy.Builder nb = b.currentNetwork().toBuilder();
      allow.forEach(nb::allow);
      b.network(nb.build());
    }
    b.approvals(approvals.rules(b.currentApprovals()));
    b.approvalHandler(approvals.handler(questions));
    return b.build();
  }

  /** {@code current} with the recommended rules ({@code --guard}) added; none is loosened. */
  static ApprovalPolicy guarded(ApprovalPolicy current) {
    ApprovalPolicy rec = ApprovalPolicy.recommended();
    ApprovalPolicy cur = current;
    ApprovalPolicy.Builder ab =
        cur.toBuilder()
            .fileDeletion(cur.fileDeletion().max(rec.fileDeletion()))
            .systemModification(cur.systemModification().max(rec.systemModification()));
    rec.shellRules().forEach(r -> ab.shell(r.pattern().pattern(), r.action()));
    rec.pythonRules().forEach((e, a) -> ab.python(e, cur.pythonRules().getOrDefault(e, a).max(a)));
    return ab.build();
  }

  /**
   * Who answers approval questions, from {@code --approve} (null: prompt when there is a terminal).
   */
  static ApprovalHandler approvalHandler(@Nullable String approve, OpenQuestions questions) {
    String how = approve == null ? "" : approve.strip().toLowerCase(Locale.ROOT);
    switch (how) {
      case "deny":
        return ApprovalHandler.denyAll();
      case "allow":
        return ApprovalHandler.allowAndRecord(r -> {});
      case "prompt":
      case "":
        ConsoleApprovalHandler console = ConsoleApprovalHandler.onTerminal(questions);
        if (console != null) {
          return console;
        }
        if (how.equals("prompt")) {
          throw new ConfigException(
              "--approve prompt needs a terminal, and this process has none: use --approve deny"
                  + " or --approve allow");
        }
        return request ->
            CompletableFuture.completedFuture(
                new ApprovalDecision(
                    false,
                    "no terminal to ask at: run in a terminal, or pass --approve allow",
                    "cli"));
      default:
        throw new ConfigException("--approve " + approve + ": unknown; use prompt, deny or allow");
    }
  }
}
