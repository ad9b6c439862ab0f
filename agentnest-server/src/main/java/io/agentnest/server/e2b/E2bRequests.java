package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** What an E2B request body and query say, read and checked: a 400 names the field and the fix. */
final class E2bRequests {
  private static final int MAX_METADATA = 64;

  private E2bRequests() {}

  /** The metadata key that asks for approvals, as /v1's {@code approvals} field does. */
  static final String APPROVALS_KEY = "agentnest.approvals";

  static @Nullable JsonNode approvals(Map<String, String> metadata) {
    String v = metadata.get(APPROVALS_KEY);
    if (v == null || v.equals("none")) {
      return null;
    }
    if (v.equals("recommended")) {
      return TextNode.valueOf(v);
    }
    throw ApiException.badRequest(
        ErrorCode.INVALID_FIELD,
        "metadata '" + APPROVALS_KEY + "' is '" + Escape.id(v) + "'",
        "use 'recommended' (risky operations wait in GET /v1/approvals) or 'none'");
  }

  static void refuseUnsupported(ObjectNode req) {
    if (req.path("allow_internet_access").asBoolean(false)) {
      throw new ApiException(
          400,
          ErrorCode.POLICY,
          "allow_internet_access is refused: AgentNest sandboxes reach only the hosts their policy"
              + " allows",
          "leave it unset and list the hosts in network.allowOut (the server's allow_hosts bounds"
              + " them)");
    }
    if (req.hasNonNull("mcp")) {
      throw new ApiException(
          400,
          ErrorCode.POLICY,
          "the MCP gateway is not served in AgentNest sandboxes",
          "run `agentnest mcp` on the host to give agents AgentNest's tools over MCP");
    }
    if (req.hasNonNull("volumeMounts") && req.get("volumeMounts").size() > 0) {
      throw new ApiException(
          400,
          ErrorCode.POLICY,
          "volume mounts are not served: a sandbox sees only its own workspace",
          "upload files with files.write, or snapshot and restore a workspace");
    }
    if (req.path("autoPause").asBoolean(false)) {
      throw new ApiException(
          400,
          ErrorCode.POLICY,
          "autoPause is not served: a sandbox is destroyed at its timeout",
          "leave autoPause unset; extend with setTimeout");
    }
    JsonNode net = req.path("network");
    if (net.path("allowPublicTraffic").asBoolean(false)) {
      throw new ApiException(
          400,
          ErrorCode.POLICY,
          "public traffic into a sandbox is not served: AgentNest exposes no sandbox ports",
          "leave network.allowPublicTraffic unset");
    }
  }

  static List<String> allowOut(ObjectNode req) {
    JsonNode allow = req.path("network").path("allowOut");
    if (allow.isMissingNode() || allow.isNull()) {
      return List.of();
    }
    if (!allow.isArray() || allow.size() > 256) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "network.allowOut must be a list of at most 256 host names",
          "send e.g. {\"network\": {\"allowOut\": [\"pypi.org\"]}}");
    }
    List<String> hosts = new ArrayList<>();
    for (JsonNode h : allow) {
      if (!h.isTextual()) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "network.allowOut must hold host names",
            "send e.g. [\"pypi.org\"]");
      }
      hosts.add(h.asText());
    }
    return hosts;
  }

  static Map<String, String> metadata(ObjectNode req) {
    Map<String, String> m = strings(req, "metadata");
    if (m.size() > MAX_METADATA) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "metadata has " + m.size() + " entries, over " + MAX_METADATA,
          "send fewer entries");
    }
    for (Map.Entry<String, String> e : m.entrySet()) {
      if (e.getKey().length() > 256 || e.getValue().length() > 1024) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "metadata key '" + Escape.id(e.getKey()) + "' or its value is too long",
            "keep keys to 256 and values to 1024 characters");
      }
      // No store keeps a NUL in text (and no E2B client needs one).
      if (e.getKey().indexOf('\0') >= 0 || e.getValue().indexOf('\0') >= 0) {
        throw ApiException.badRequest(
            ErrorCode.INVALID_FIELD,
            "metadata key '" + Escape.id(e.getKey()) + "' or its value holds a NUL character",
            "send text without NUL characters");
      }
    }
    return m;
  }

  static Map<String, String> strings(ObjectNode req, String field) {
    JsonNode n = req.get(field);
    if (n == null || n.isNull()) {
      return Map.of();
    }
    try {
      return E2bWire.stringMap(req, field);
    } catch (E2bConnect.RpcException e) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD, String.valueOf(e.getMessage()), "send an object of strings");
    }
  }

  /**
   * The tenant's sandbox by the id its E2B client knows, running or paused; another tenant's or an
   * unknown id is one 404. A sandbox made through /v1 (or adopted after a restart) gets its E2B
   * state on first use.
   */
  static Map<String, String> metadataQuery(@Nullable String q) {
    if (q == null || q.isEmpty()) {
      return Map.of();
    }
    Map<String, String> m = new LinkedHashMap<>();
    for (String pair : q.split("&", 65)) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        continue;
      }
      m.put(
          URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
          URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return m;
  }

  /** A year: more than any max_ttl, and far from where instant arithmetic overflows. */
  static final long MAX_SECONDS = 366L * 24 * 3600;

  static long seconds(ObjectNode req, String field) {
    JsonNode n = req.path(field);
    long s = n.canConvertToLong() ? n.asLong(-1) : -1;
    if (s <= 0 || s > MAX_SECONDS) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          field
              + " must be a number of seconds in 1.."
              + MAX_SECONDS
              + ", got "
              + Escape.id(n.toString()),
          "send e.g. {\"" + field + "\": 300}");
    }
    return s;
  }
}
