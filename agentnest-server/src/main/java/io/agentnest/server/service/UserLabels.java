package io.agentnest.server.service;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.spi.Labels;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A tenant's own labels on its sandboxes: bounded, printable, and never one of the names the
 * runtime and the server decide by (owner, expiry, tenant, pool), which a label could otherwise
 * forge.
 */
public final class UserLabels {
  static final int MAX_LABELS = 32;
  private static final Pattern KEY = Pattern.compile("[a-z0-9]([a-z0-9._/-]{0,62})?");
  private static final int MAX_VALUE = 256;

  private UserLabels() {}

  static Map<String, String> check(@Nullable Map<String, String> labels) {
    if (labels == null) {
      return Map.of();
    }
    if (labels.size() > MAX_LABELS) {
      throw bad(labels.size() + " labels are too many", "send at most " + MAX_LABELS + " labels");
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> l : labels.entrySet()) {
      String k = l.getKey();
      String v = l.getValue();
      if (!KEY.matcher(k).matches()) {
        throw bad(
            "label key '" + Escape.id(k) + "' is invalid",
            "use 1-63 lower-case letters, digits, '.', '_', '/' or '-', starting with a letter or"
                + " digit");
      }
      if (k.startsWith("agentnest.") || k.startsWith("agentnest-server/")) {
        throw bad(
            "label key '"
                + Escape.id(k)
                + "' is reserved: the runtime and the server own every"
                + " 'agentnest.' and 'agentnest-server/' label",
            "pick another name, e.g. 'team'");
      }
      if (v == null || v.length() > MAX_VALUE || !printable(v)) {
        throw bad(
            "label '"
                + Escape.id(k)
                + "' has a value that is missing, longer than "
                + MAX_VALUE
                + " characters or not printable",
            "send a short printable value");
      }
      out.put(k, v);
    }
    return out;
  }

  /**
   * What a tenant sees of a sandbox's engine labels: not the server's host, pid or stores; the
   * owner is the server, named so without its host and pid.
   */
  public static Map<String, String> visible(Map<String, String> engine) {
    Map<String, String> out = new LinkedHashMap<>();
    engine.forEach(
        (k, v) -> {
          if (k.equals(Labels.OWNER)) {
            out.put(k, "agentnest-server");
            return;
          }
          if (!k.startsWith("agentnest-server/")
              && !k.equals(Labels.OWNER_HOST)
              && !k.equals(Labels.OWNER_PID)
              && !k.equals(Labels.BULK_DIR)) {
            out.put(k, v);
          }
        });
    return out;
  }

  private static boolean printable(String v) {
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        return false;
      }
    }
    return true;
  }

  private static ApiException bad(String message, String fix) {
    return ApiException.badRequest(ErrorCode.INVALID_FIELD, message, fix);
  }
}
