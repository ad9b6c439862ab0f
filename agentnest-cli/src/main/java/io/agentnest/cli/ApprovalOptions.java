package io.agentnest.cli;

import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * {@code --guard} and {@code --approve}: one declaration for the commands that make a sandbox
 * ({@link SandboxOptions}) and those that run something in one made earlier ({@link
 * AttachOptions}).
 */
final class ApprovalOptions {
  @Option(
      names = "--approve",
      paramLabel = "HOW",
      description =
          "Who answers operations that need approval (see --guard and the config's approvals:"
              + " section): prompt (ask at this terminal; the default when there is one), deny"
              + " (the default without a terminal), allow (allow and record in the audit log).")
  @Nullable String approve;

  @Option(
      names = "--guard",
      description =
          "Ask before file deletion, system modification, git push and subprocesses; refuse"
              + " curl|sh (adds the recommended approval rules to the configuration's).")
  boolean guard;

  /** Whether either option was given. */
  boolean given() {
    return guard || approve != null;
  }

  /** {@code current}, with the recommended rules added under {@code --guard}. */
  ApprovalPolicy rules(ApprovalPolicy current) {
    return guard ? SandboxOptions.guarded(current) : current;
  }

  ApprovalHandler handler(OpenQuestions questions) {
    return SandboxOptions.approvalHandler(approve, questions);
  }
}
