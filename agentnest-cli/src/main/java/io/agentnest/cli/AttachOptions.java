package io.agentnest.cli;

import io.agentnest.ApprovalPolicy;
import io.agentnest.Sandbox;
import io.agentnest.config.AgentNestConfig;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * The options of commands that run something in a sandbox made earlier ({@code exec}, {@code code},
 * {@code shell}). A sandbox's labels carry no approval rules and no handler, so a handle that
 * reattaches would ask nothing: the rules come from this process's configuration (and {@code
 * --guard}) on every call, as they do for {@code run}.
 */
final class AttachOptions {
  @Option(
      names = "--config",
      paramLabel = "FILE",
      description =
          "Configuration file whose approvals: rules apply (default: $AGENTNEST_CONFIG,"
              + " ./agentnest.yaml, then ~/.config/agentnest/agentnest.yaml).")
  @Nullable Path config;

  @Option(
      names = "--profile",
      paramLabel = "NAME",
      description = "Profile of the configuration file (default: $AGENTNEST_PROFILE, else none).")
  @Nullable String profile;

  @Option(
      names = "--approve",
      paramLabel = "HOW",
      description =
          "Who answers operations that need approval: prompt (ask at this terminal; the default"
              + " when there is one), deny (the default without a terminal), allow (allow and"
              + " record in the audit log).")
  @Nullable String approve;

  @Option(
      names = "--guard",
      description =
          "Ask before file deletion, system modification, git push and subprocesses; refuse"
              + " curl|sh (adds the recommended approval rules to the configuration's).")
  boolean guard;

  /** Attaches to sandbox {@code id} with this process's approval rules and handler. */
  Sandbox connect(String id, OpenQuestions questions) {
    AgentNestConfig file = config != null ? AgentNestConfig.load(config) : AgentNestConfig.load();
    ApprovalPolicy approvals = file.sandboxConfig(profile).approvals();
    if (guard) {
      approvals = SandboxOptions.guarded(approvals);
    }
    return Attach.connect(id, approvals, SandboxOptions.approvalHandler(approve, questions));
  }
}
