package io.agentnest.cli;

import io.agentnest.ApprovalPolicy;
import io.agentnest.Sandbox;
import io.agentnest.config.AgentNestConfig;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Mixin;
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

  @Mixin ApprovalOptions approvals = new ApprovalOptions();

  /** Attaches to sandbox {@code id} with this process's approval rules and handler. */
  Sandbox connect(String id, OpenQuestions questions) {
    AgentNestConfig file = config != null ? AgentNestConfig.load(config) : AgentNestConfig.load();
    ApprovalPolicy rules = approvals.rules(file.sandboxConfig(profile).approvals());
    return Attach.connect(id, rules, approvals.handler(questions));
  }
}
