package io.agentnest.server.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.ConfigException;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Approval rules as the server reads them: the operator's floor in server.yaml ({@code
 * policy.approvals}, the keys of agentnest.yaml's {@code approvals}) and a create request's {@code
 * approvals} (camelCase). Either is {@code "none"}, {@code "recommended"} or an object of rules;
 * what a request asks for is combined with the floors by {@link ApprovalPolicy#stricter}, so it can
 * add rules but never loosen the server's or its tenant's.
 *
 * <p>A request's rules are bounded (they come from a tenant, and shell patterns run on the server
 * for every command): at most {@value #MAX_RULES} shell rules of at most {@value #MAX_PATTERN}
 * characters, {@value #MAX_RULES} Python events, a timeout of at most {@value #MAX_TIMEOUT_SECONDS}
 * s; a pattern that backtracks without end counts as matching after its step budget.
 */
public final class ApprovalRules {
  static final int MAX_RULES = 32;
  static final int MAX_PATTERN = 256;
  static final int MAX_TIMEOUT_SECONDS = 600;

  private static final Set<String> WIRE_FIELDS =
      Set.of("base", "fileDelete", "systemModify", "shell", "python", "timeoutSeconds");

  private ApprovalRules() {}

  /** The named presets: {@code none} and {@code recommended}. */
  public static ApprovalPolicy preset(String name, Function<String, RuntimeException> bad) {
    return switch (name) {
      case "none" -> ApprovalPolicy.none();
      case "recommended" -> ApprovalPolicy.recommended();
      default -> throw bad.apply("'" + Escape.id(name) + "' is not none or recommended");
    };
  }

  /**
   * A create request's {@code approvals}: {@code "none"}, {@code "recommended"}, or {@code {base,
   * fileDelete, systemModify, shell: [{pattern, action}], python: {event: action}, timeoutSeconds}}
   * with actions {@code allow}, {@code ask}, {@code deny}.
   */
  public static ApprovalPolicy fromWire(JsonNode n) {
    Function<String, RuntimeException> bad = msg -> invalid("approvals", msg);
    if (n.isTextual()) {
      return preset(n.asText(), bad);
    }
    if (!n.isObject()) {
      throw invalid("approvals", "must be \"none\", \"recommended\" or an object of rules");
    }
    for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!WIRE_FIELDS.contains(f)) {
        throw new ApiException(
            400,
            ErrorCode.UNKNOWN_FIELD,
            "unknown field 'approvals." + Escape.id(f) + "'",
            "remove it; the fields are " + WIRE_FIELDS.stream().sorted().toList());
      }
    }
    ApprovalPolicy.Builder b =
        n.has("base")
            ? preset(text(n.get("base"), "approvals.base"), m -> invalid("approvals.base", m))
                .toBuilder()
            : ApprovalPolicy.builder();
    try {
      if (n.has("fileDelete")) {
        b.fileDeletion(action(n.get("fileDelete"), "approvals.fileDelete"));
      }
      if (n.has("systemModify")) {
        b.systemModification(action(n.get("systemModify"), "approvals.systemModify"));
      }
      JsonNode shell = n.path("shell");
      if (!shell.isMissingNode()) {
        if (!shell.isArray() || shell.size() > MAX_RULES) {
          throw invalid("approvals.shell", "must be a list of at most " + MAX_RULES + " rules");
        }
        for (int i = 0; i < shell.size(); i++) {
          String at = "approvals.shell[" + i + "]";
          JsonNode r = shell.get(i);
          String pattern = text(r.path("pattern"), at + ".pattern");
          if (pattern.length() > MAX_PATTERN) {
            throw invalid(at + ".pattern", "is longer than " + MAX_PATTERN + " characters");
          }
          b.shell(pattern, action(r.path("action"), at + ".action"));
        }
      }
      JsonNode python = n.path("python");
      if (!python.isMissingNode()) {
        if (!python.isObject() || python.size() > MAX_RULES) {
          throw invalid(
              "approvals.python",
              "must be an object of at most " + MAX_RULES + " event names to actions");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = python.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          b.python(e.getKey(), action(e.getValue(), "approvals.python." + e.getKey()));
        }
      }
      if (n.has("timeoutSeconds")) {
        JsonNode t = n.get("timeoutSeconds");
        if (!t.canConvertToInt() || t.asInt() < 1 || t.asInt() > MAX_TIMEOUT_SECONDS) {
          throw invalid("approvals.timeoutSeconds", "must be 1.." + MAX_TIMEOUT_SECONDS);
        }
        b.timeout(Duration.ofSeconds(t.asInt()));
      }
      return b.build();
    } catch (ConfigException e) {
      // the core's own check (a pattern that does not compile, an event name): its message says
      // what to write
      throw invalid("approvals", String.valueOf(e.getMessage()));
    }
  }

  /**
   * server.yaml's {@code policy.approvals}: {@code none}, {@code recommended}, or the keys of
   * agentnest.yaml's {@code approvals}: {@code base}, {@code file_delete}, {@code system_modify},
   * {@code shell: {regex: action}}, {@code python: {event: action}}, {@code timeout}.
   */
  static ApprovalPolicy fromConfig(JsonNode n, String source) {
    Function<String, RuntimeException> bad =
        msg -> new IllegalArgumentException(source + ": policy.approvals " + msg);
    if (n.isTextual()) {
      return preset(n.asText(), bad);
    }
    if (!n.isObject()) {
      throw bad.apply("must be none, recommended or rules, e.g. {base: recommended, shell: {...}}");
    }
    List<String> known =
        List.of("base", "file_delete", "system_modify", "shell", "python", "timeout");
    for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!known.contains(f)) {
        throw bad.apply("has an unknown key '" + f + "': known keys are " + known);
      }
    }
    try {
      ApprovalPolicy.Builder b =
          n.has("base")
              ? preset(n.get("base").asText(), bad).toBuilder()
              : ApprovalPolicy.builder();
      if (n.has("file_delete")) {
        b.fileDeletion(configAction(n.get("file_delete"), "file_delete", bad));
      }
      if (n.has("system_modify")) {
        b.systemModification(configAction(n.get("system_modify"), "system_modify", bad));
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = n.path("shell").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        b.shell(e.getKey(), configAction(e.getValue(), "shell '" + e.getKey() + "'", bad));
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = n.path("python").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        b.python(e.getKey(), configAction(e.getValue(), "python '" + e.getKey() + "'", bad));
      }
      if (n.has("timeout")) {
        b.timeout(ServerConfig.duration("policy.approvals.timeout", n.get("timeout").asText()));
      }
      return b.build();
    } catch (ConfigException e) {
      throw bad.apply(String.valueOf(e.getMessage()));
    }
  }

  private static Action configAction(
      JsonNode v, String key, Function<String, RuntimeException> bad) {
    Action a = parseAction(v);
    if (a == null) {
      throw bad.apply(key + ": '" + v.asText() + "' is not allow, ask or deny");
    }
    return a;
  }

  private static Action action(JsonNode v, String field) {
    Action a = parseAction(v);
    if (a == null) {
      throw invalid(field, "must be allow, ask or deny");
    }
    return a;
  }

  private static @Nullable Action parseAction(JsonNode v) {
    if (!v.isTextual()) {
      return null;
    }
    return switch (v.asText().toLowerCase(Locale.ROOT)) {
      case "allow" -> Action.ALLOW;
      case "ask" -> Action.ASK;
      case "deny" -> Action.DENY;
      default -> null;
    };
  }

  private static String text(JsonNode v, String field) {
    if (!v.isTextual() || v.asText().isEmpty()) {
      throw invalid(field, "must be a non-empty string");
    }
    return v.asText();
  }

  private static ApiException invalid(String field, String problem) {
    return new ApiException(
        400,
        ErrorCode.INVALID_FIELD,
        "field '" + field + "' " + problem,
        "see docs/server.md (Approvals) for the shape, e.g. {\"base\": \"recommended\","
            + " \"shell\": [{\"pattern\": \"\\\\bterraform\\\\s+apply\\\\b\", \"action\": \"ask\"}]}");
  }
}
