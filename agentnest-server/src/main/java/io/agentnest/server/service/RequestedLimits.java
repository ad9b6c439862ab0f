package io.agentnest.server.service;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ConfigException;
import io.agentnest.SandboxLimit;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Wire;
import java.util.EnumMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The limits a create request asks for: the {@code limits} object, keyed by each {@link
 * SandboxLimit}'s one name, and the older top-level fields ({@code pidsLimit}, {@code
 * tmpSizeBytes}, {@code workspaceSizeBytes}) that still carry the limits they carried. A limit
 * added to the table needs nothing here.
 */
final class RequestedLimits {
  /** A value asked for, and the request field that asked, for the messages that refuse it. */
  record Asked(long value, String field) {}

  private RequestedLimits() {}

  /**
   * Reads the request's limits.
   *
   * @throws ApiException 422 for an unknown name, a value that is not a whole number (or, for a
   *     size, a size such as {@code 64m}), or a limit given both ways
   */
  static Map<SandboxLimit, Asked> read(Wire.CreateSandbox req) {
    Map<SandboxLimit, Asked> out = new EnumMap<>(SandboxLimit.class);
    older(out, SandboxLimit.PIDS, req.pidsLimit());
    older(out, SandboxLimit.TMP_SIZE, req.tmpSizeBytes());
    older(out, SandboxLimit.WORKSPACE_SIZE, req.workspaceSizeBytes());
    Map<String, JsonNode> limits = req.limits() == null ? Map.of() : req.limits();
    for (Map.Entry<String, JsonNode> e : limits.entrySet()) {
      String field = "limits." + e.getKey();
      SandboxLimit l =
          SandboxLimit.named(e.getKey())
              .orElseThrow(
                  () ->
                      invalid(
                          "limits has no limit named '" + Escape.id(e.getKey()) + "'",
                          "use one of " + SandboxLimit.keys(),
                          "limits"));
      Asked earlier = out.get(l);
      if (earlier != null) {
        throw invalid(
            field + " and " + earlier.field() + " both set the same limit",
            "send only " + field,
            field);
      }
      out.put(l, new Asked(value(l, field, e.getValue()), field));
    }
    return out;
  }

  private static void older(Map<SandboxLimit, Asked> out, SandboxLimit l, @Nullable Long v) {
    if (v != null) {
      out.put(l, new Asked(v, l.wireAlias().orElseThrow()));
    }
  }

  private static long value(SandboxLimit l, String field, JsonNode v) {
    if (v.isIntegralNumber() && v.canConvertToLong()) {
      return v.asLong();
    }
    if (v.isTextual()) {
      try {
        return l.parse(v.asText());
      } catch (ConfigException e) {
        throw invalid(
            field + " '" + Escape.id(v.asText()) + "' is not " + form(l),
            "send e.g. " + l.byDefault(),
            field);
      }
    }
    throw invalid(field + " is not " + form(l), "send e.g. " + l.byDefault(), field);
  }

  private static String form(SandboxLimit l) {
    return l.unit() == SandboxLimit.Unit.BYTES
        ? "a whole number of bytes or a size such as \"64m\""
        : "a whole number";
  }

  private static ApiException invalid(String message, String fix, String field) {
    return new ApiException(422, ErrorCode.INVALID_FIELD, message, fix, Map.of("field", field));
  }
}
