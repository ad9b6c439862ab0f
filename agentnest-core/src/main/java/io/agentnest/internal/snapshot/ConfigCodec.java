package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ConfigException;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.Labels;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.ToLongFunction;

/**
 * The encodings of a {@link SandboxConfig}, in one place: the JSON kept beside a sandbox's saved
 * state (never secret values, only their names; no live objects such as listeners, handlers or the
 * audit log), and the few fields a sandbox's labels carry for a process that attaches to it later.
 */
public final class ConfigCodec {
  /**
   * A field carried both in the JSON and in the labels: its JSON name, its label key, the least
   * value a config accepts (a label below it is raised to it), and how to read and set it.
   */
  private record Carried(
      String json,
      String label,
      long least,
      ToLongFunction<SandboxConfig> get,
      BiConsumer<SandboxConfig.Builder, Long> set) {}

  private static final Carried EXEC_TIMEOUT =
      new Carried(
          "exec_timeout_ms",
          Labels.EXEC_TIMEOUT_MS,
          1,
          c -> c.execTimeout().toMillis(),
          (b, ms) -> b.execTimeout(Duration.ofMillis(ms)));
  private static final Carried MAX_OUTPUT =
      new Carried(
          "max_output_bytes",
          Labels.MAX_OUTPUT,
          0,
          SandboxConfig::maxOutputBytes,
          SandboxConfig.Builder::maxOutputBytes);
  private static final Carried MEMORY =
      new Carried(
          "memory_bytes",
          Labels.MEMORY,
          16L << 20,
          SandboxConfig::memoryBytes,
          SandboxConfig.Builder::memoryBytes);

  /**
   * What a handle from {@code connect} needs to bound its calls like the creator's: the exec
   * timeout, the output cap, and the memory limit (fork and snapshot bound the state by it).
   */
  private static final List<Carried> LABELLED = List.of(EXEC_TIMEOUT, MAX_OUTPUT, MEMORY);

  private ConfigCodec() {}

  /**
   * The labels a sandbox carries for {@code c}: decimal values of the {@link #LABELLED} fields, the
   * same numbers as in the JSON.
   */
  public static Map<String, String> toLabels(SandboxConfig c) {
    Map<String, String> labels = new LinkedHashMap<>();
    LABELLED.forEach(f -> labels.put(f.label(), Long.toString(f.get().applyAsLong(c))));
    return labels;
  }

  /**
   * Sets on {@code b} what {@code labels} (from {@link #toLabels}, of this or an earlier version)
   * carry. A missing or unreadable label keeps the default; a value below what a config accepts is
   * raised to the least it accepts, so a hand-edited label cannot make the sandbox unattachable.
   */
  public static SandboxConfig.Builder fromLabels(
      Map<String, String> labels, SandboxConfig.Builder b) {
    for (Carried f : LABELLED) {
      String v = labels.get(f.label());
      if (v == null) {
        continue;
      }
      try {
        f.set().accept(b, Math.max(f.least(), Long.parseLong(v)));
      } catch (NumberFormatException e) {
        // Unreadable: the default stands.
      }
    }
    return b;
  }

  /** The parts of the config a restore needs; never secret values (only their names). */
  public static ObjectNode toJson(SandboxConfig c) {
    ObjectNode o = Json.object();
    o.put("backend", c.backend()).put("image", c.image());
    if (c.runtime() != null) {
      o.put("runtime", c.runtime());
    }
    if (c.tenant() != null) {
      o.put("tenant", c.tenant());
    }
    o.put("cpus", c.cpus()).put(MEMORY.json(), c.memoryBytes());
    putLimits(o, c);
    o.put(MAX_OUTPUT.json(), c.maxOutputBytes()).put("user", c.user());
    ObjectNode env = o.putObject("env");
    c.env().forEach(env::put);
    c.secretEnv().keySet().forEach(o.putArray("secret_env_names")::add);
    if (c.network().isNone()) {
      o.put("network", "none");
    } else {
      ObjectNode n = o.putObject("network");
      c.network().rules().forEach(n.putArray("allow")::add);
      c.network().allowedAddresses().forEach(n.putArray("allow_addresses")::add);
    }
    o.put("redact_credentials", c.redactCredentials()).put("workdir", c.workdir());
    ObjectNode labels = o.putObject("labels");
    c.labels().forEach(labels::put);
    o.put(EXEC_TIMEOUT.json(), c.execTimeout().toMillis())
        .put("start_timeout_ms", c.startTimeout().toMillis())
        .put("ttl_ms", c.ttl().toMillis())
        .put("read_only_root", c.readOnlyRootFilesystem())
        .put("read_only_workspace", c.readOnlyWorkspace());
    if (c.seccompProfile() != null) {
      o.put("seccomp_profile", c.seccompProfile());
    }
    ApprovalPolicy a = c.approvals();
    ObjectNode ap = o.putObject("approvals");
    ap.put("file_deletion", a.fileDeletion().name())
        .put("system_modification", a.systemModification().name())
        .put("timeout_ms", a.timeout().toMillis());
    ArrayNode shell = ap.putArray("shell");
    a.shellRules()
        .forEach(
            r ->
                shell
                    .addObject()
                    .put("regex", r.pattern().pattern())
                    .put("action", r.action().name()));
    ObjectNode py = ap.putObject("python");
    a.pythonRules().forEach((k, v) -> py.put(k, v.name()));
    a.writablePaths().forEach(ap.putArray("writable_paths")::add);
    return o;
  }

  /**
   * The config {@code c} (from {@link #toJson}) encodes; fields a config of an older version lacks
   * keep their defaults.
   *
   * @throws IllegalArgumentException or {@link ConfigException} when a value is one this version
   *     refuses
   */
  public static SandboxConfig fromJson(JsonNode c) {
    SandboxConfig.Builder b =
        SandboxConfig.builder()
            .backend(c.path("backend").asText("docker"))
            .image(c.path("image").asText())
            .cpus(c.path("cpus").asDouble())
            .memoryBytes(c.path(MEMORY.json()).asLong())
            .maxOutputBytes(c.path(MAX_OUTPUT.json()).asLong())
            .user(c.path("user").asText());
    if (c.hasNonNull("runtime")) {
      b.runtime(c.path("runtime").asText());
    }
    if (c.hasNonNull("tenant")) {
      b.tenant(c.path("tenant").asText());
    }
    readLimits(c, b);
    for (Iterator<Map.Entry<String, JsonNode>> it = c.path("env").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      b.env(e.getKey(), e.getValue().asText());
    }
    JsonNode n = c.path("network");
    if (n.isObject()) {
      NetworkPolicy.Builder nb = NetworkPolicy.builder();
      n.path("allow").forEach(r -> nb.allow(r.asText()));
      n.path("allow_addresses").forEach(r -> nb.allowAddress(r.asText()));
      b.network(nb.build());
    }
    if (c.has("workdir")) {
      b.redactCredentials(c.path("redact_credentials").asBoolean(true))
          .workdir(c.path("workdir").asText())
          .execTimeout(Duration.ofMillis(c.path(EXEC_TIMEOUT.json()).asLong()))
          .startTimeout(Duration.ofMillis(c.path("start_timeout_ms").asLong()))
          .ttl(Duration.ofMillis(c.path("ttl_ms").asLong()))
          .readOnlyRootFilesystem(c.path("read_only_root").asBoolean(true))
          .readOnlyWorkspace(c.path("read_only_workspace").asBoolean(false));
      for (Iterator<Map.Entry<String, JsonNode>> it = c.path("labels").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        b.label(e.getKey(), e.getValue().asText());
      }
      if (c.hasNonNull("seccomp_profile")) {
        b.seccompProfile(c.path("seccomp_profile").asText());
      }
      JsonNode ap = c.path("approvals");
      ApprovalPolicy.Builder a =
          ApprovalPolicy.builder()
              .fileDeletion(action(ap.path("file_deletion")))
              .systemModification(action(ap.path("system_modification")))
              .timeout(Duration.ofMillis(ap.path("timeout_ms").asLong(60_000)));
      ap.path("shell").forEach(r -> a.shell(r.path("regex").asText(), action(r.path("action"))));
      for (Iterator<Map.Entry<String, JsonNode>> it = ap.path("python").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        a.python(e.getKey(), action(e.getValue()));
      }
      if (ap.has("writable_paths")) {
        List<String> paths = new ArrayList<>();
        ap.path("writable_paths").forEach(x -> paths.add(x.asText()));
        a.writablePaths(paths);
      }
      b.approvals(a.build());
    }
    return b.build();
  }

  /**
   * The limits: those that predate {@link SandboxLimit} under their old keys ({@code pids_limit}),
   * as every saved config has them; the later ones in a {@code limits} object by their one name,
   * and only when not at their default, so a config that uses none encodes as it always did.
   */
  private static void putLimits(ObjectNode o, SandboxConfig c) {
    ObjectNode later = Json.object();
    SandboxLimit.encode(c.limits(), SandboxLimit::savedAlias, o::put, later::put);
    if (!later.isEmpty()) {
      o.set("limits", later);
    }
  }

  private static void readLimits(JsonNode c, SandboxConfig.Builder b) {
    for (SandboxLimit l : SandboxLimit.values()) {
      l.savedAlias().filter(c::has).ifPresent(k -> b.limit(l, c.path(k).asLong()));
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = c.path("limits").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      SandboxLimit l =
          SandboxLimit.named(e.getKey())
              .orElseThrow(
                  () ->
                      new ConfigException(
                          "the saved config sets limit '"
                              + e.getKey()
                              + "', which this version of AgentNest does not know: restore it"
                              + " with the version that saved it, or a later one"));
      if (!e.getValue().canConvertToExactIntegral() || !e.getValue().canConvertToLong()) {
        throw new ConfigException(
            "the saved config's limit '" + e.getKey() + "' is not a whole number: " + e.getValue());
      }
      b.limit(l, e.getValue().asLong());
    }
  }

  private static ApprovalPolicy.Action action(JsonNode n) {
    return ApprovalPolicy.Action.valueOf(n.asText("ALLOW"));
  }
}
