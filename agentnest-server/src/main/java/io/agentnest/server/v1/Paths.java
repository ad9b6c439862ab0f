package io.agentnest.server.v1;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import org.jspecify.annotations.Nullable;

/**
 * Checks a workspace path from a query before it reaches the sandbox (which checks again):
 * relative, no {@code ..} segment, no NUL or control characters, bounded.
 */
final class Paths {
  private Paths() {}

  static String check(@Nullable String path, boolean emptyAllowed) {
    String p = path == null ? "" : path;
    if (p.isEmpty()) {
      if (emptyAllowed) {
        return p;
      }
      throw bad("the 'path' query parameter is missing", "add ?path=data/in.csv");
    }
    if (p.length() > 4096) {
      throw bad("path is longer than 4096 characters", "use a shorter path");
    }
    if (p.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      throw bad("path contains a control character", "use printable characters only");
    }
    if (p.startsWith("/") || p.startsWith("\\")) {
      throw bad(
          "path '" + Escape.id(p) + "' is absolute",
          "use a path relative to /workspace, e.g. data/in.csv");
    }
    for (String seg : p.split("[/\\\\]", -1)) {
      if (seg.equals("..")) {
        throw bad(
            "path '" + Escape.id(p) + "' has a '..' segment: it would leave the workspace",
            "use a path inside /workspace without '..'");
      }
    }
    return p;
  }

  private static ApiException bad(String message, String fix) {
    return ApiException.badRequest(ErrorCode.BAD_PATH, message, fix);
  }
}
