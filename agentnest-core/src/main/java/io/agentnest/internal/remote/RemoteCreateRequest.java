package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.UnsupportedControlException;
import io.agentnest.internal.support.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * What a sandbox configuration becomes on the way to a server: the {@code POST /v1/sandboxes} body,
 * and the refusal of every setting the server cannot take (fail-closed: dropping one would create a
 * sandbox weaker than asked).
 */
public final class RemoteCreateRequest {
  /** What a configuration holds when nothing was set: settings still there went unsaid. */
  private static final SandboxConfig DEFAULTS = SandboxConfig.builder().build();

  private RemoteCreateRequest() {}

  /** The {@code POST /v1/sandboxes} body for {@code config} (docs/server.md, openapi.yaml). */
  public static ObjectNode body(SandboxConfig config) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("image", config.image());
    body.put("memoryBytes", config.memoryBytes());
    body.put("cpus", config.cpus());
    body.put("ttlSeconds", config.ttl().toSeconds());
    if (!config.env().isEmpty()) {
      ObjectNode env = body.putObject("env");
      config.env().forEach(env::put);
    }
    if (!config.network().isNone()) {
      var hosts = body.putArray("allowHosts");
      config.network().rules().forEach(hosts::add);
    }
    if (!config.approvals().isInactive()) {
      // The server's approvals queue asks the tenant (GET/POST /v1/approvals); the server adds
      // its own and the tenant's floor to these rules.
      body.set("approvals", approvalRules(config.approvals()));
    }
    if (config.runtime() != null) {
      body.put("runtime", config.runtime());
    }
    if (config.gpus() > 0) {
      throw new UnsupportedControlException(
          "the remote backend cannot give a sandbox GPUs (gpus "
              + config.gpus()
              + "): create it on a host with an NVIDIA GPU, backend docker");
    }
    // The limits that predate the limits object go under their own fields, which every server
    // version reads; the later ones by their one name, and only when set, so a config that uses
    // none is accepted by a server that predates them.
    ObjectNode limits = Json.MAPPER.createObjectNode();
    SandboxLimit.encode(config.limits(), SandboxLimit::wireAlias, body::put, limits::put);
    if (!limits.isEmpty()) {
      body.set("limits", limits);
    }
    if (!config.labels().isEmpty()) {
      ObjectNode labels = body.putObject("labels");
      config.labels().forEach(labels::put);
    }
    return body;
  }

  /** The create request's {@code approvals} object (docs/server.md, Approvals). */
  private static ObjectNode approvalRules(ApprovalPolicy a) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("fileDelete", a.fileDeletion().name().toLowerCase(Locale.ROOT));
    o.put("systemModify", a.systemModification().name().toLowerCase(Locale.ROOT));
    var shell = o.putArray("shell");
    for (ApprovalPolicy.ShellRule r : a.shellRules()) {
      shell
          .addObject()
          .put("pattern", r.pattern().pattern())
          .put("action", r.action().name().toLowerCase(Locale.ROOT));
    }
    ObjectNode python = o.putObject("python");
    a.pythonRules()
        .forEach((event, action) -> python.put(event, action.name().toLowerCase(Locale.ROOT)));
    o.put("timeoutSeconds", Math.max(1, a.timeout().toSeconds()));
    return o;
  }

  // Settings that act on this host (listeners, handlers, a local audit log) or that the HTTP API
  // does not carry yet: refusing them is fail-closed, silently dropping them would not be.
  static void refuseLocalOnly(SandboxConfig c) {
    List<String> refused = new ArrayList<>();
    if (!c.secretEnv().isEmpty()) {
      refused.add("secretEnv (secret environment variables)");
    }
    if (c.approvalHandler() != null) {
      refused.add("approvalHandler (the server's approvals queue answers: GET/POST /v1/approvals)");
    }
    // Rules the server cannot take would otherwise be dropped, and their operations go ahead.
    if (!c.approvals().isInactive()) {
      if (!c.approvals().writablePaths().equals(ApprovalPolicy.builder().build().writablePaths())) {
        refused.add("approval writablePaths other than the default (the server decides them)");
      }
      if (c.approvals().shellRules().stream().anyMatch(r -> r.pattern().flags() != 0)) {
        refused.add("shell approval patterns compiled with flags (write them inline, e.g. (?i))");
      }
    }
    if (!c.networkListeners().isEmpty()) {
      refused.add("onNetworkEvent listeners");
    }
    if (c.auditLog() != null) {
      refused.add("auditLog (the server keeps the audit)");
    }
    SandboxConfig d = DEFAULTS;
    if (!c.workdir().equals(d.workdir())) {
      refused.add("workdir");
    }
    if (!c.user().equals(d.user())) {
      refused.add("user");
    }
    if (c.readOnlyRootFilesystem() != d.readOnlyRootFilesystem()
        || c.readOnlyWorkspace() != d.readOnlyWorkspace()) {
      refused.add("read-only settings");
    }
    if (!Objects.equals(c.seccompProfile(), d.seccompProfile())) {
      refused.add("seccompProfile (the server's applies)");
    }
    if (!c.budgets().equals(d.budgets())) {
      refused.add("budgets");
    }
    if (c.redactCredentials() != d.redactCredentials()) {
      refused.add("redactCredentials");
    }
    if (c.tenant() != null) {
      refused.add("tenant (the API key names it)");
    }
    if (!refused.isEmpty()) {
      throw new UnsupportedControlException(
          "a remote sandbox cannot take "
              + String.join(", ", refused)
              + ": remove them from the configuration, or create the sandbox locally");
    }
  }
}
