package io.agentnest.server.e2b;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.FileInfo;
import io.agentnest.server.e2b.E2bConnect.Code;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Wire;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * E2B's wire shapes in one place: the proto3 JSON of envd's messages (camelCase fields, int64 as
 * strings, enums by name, bytes as base64) and the REST API's error body, plus the mapping of E2B's
 * {@code /home/user} onto the workspace. Fields a client sends are read with their types checked; a
 * wrong type is an {@code invalid_argument} naming the field.
 */
final class E2bWire {
  /** Where E2B users expect their files: the workspace, as the SDK names it. */
  static final String HOME = "/home/user";

  private static final String WORKSPACE = "/workspace";

  /** Strings a client may send in one list or map (arguments, environment). */
  private static final int MAX_ITEMS = 1024;

  private E2bWire() {}

  static @Nullable String text(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isTextual() && !v.isNumber()) {
      throw E2bConnect.error(Code.INVALID_ARGUMENT, "field '" + field + "' must be a string");
    }
    return v.asText();
  }

  static List<String> strings(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      return List.of();
    }
    if (!v.isArray() || v.size() > MAX_ITEMS) {
      throw E2bConnect.error(
          Code.INVALID_ARGUMENT,
          "field '" + field + "' must be a list of at most " + MAX_ITEMS + " strings");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode s : v) {
      if (!s.isTextual()) {
        throw E2bConnect.error(
            Code.INVALID_ARGUMENT, "field '" + field + "' must hold strings only");
      }
      out.add(s.asText());
    }
    return out;
  }

  static Map<String, String> stringMap(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      return Map.of();
    }
    if (!v.isObject() || v.size() > MAX_ITEMS) {
      throw E2bConnect.error(
          Code.INVALID_ARGUMENT,
          "field '" + field + "' must be an object of at most " + MAX_ITEMS + " strings");
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!e.getValue().isTextual()) {
        throw E2bConnect.error(
            Code.INVALID_ARGUMENT,
            "field '" + field + "." + Escape.id(e.getKey()) + "' must be a string");
      }
      out.put(e.getKey(), e.getValue().asText());
    }
    return out;
  }

  /**
   * Maps an E2B path onto a workspace path: {@code /home/user/x}, {@code /workspace/x} and a
   * relative {@code x} are the same file; any other absolute path is outside what AgentNest lets a
   * client touch and is refused, naming the fix. The core checks the result again ({@code ..},
   * control characters, symlinks in the sandbox).
   */
  static String toWorkspace(@Nullable String path) {
    if (path == null || path.isEmpty()) {
      throw E2bConnect.error(Code.INVALID_ARGUMENT, "the path is missing");
    }
    // A NUL (e.g. in a multipart file name) reached the file system as a 500.
    if (path.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      throw E2bConnect.error(
          Code.INVALID_ARGUMENT,
          "path '" + Escape.id(path) + "' contains a control character: use printable ones only");
    }
    for (String root : List.of(HOME, WORKSPACE)) {
      if (path.equals(root) || path.equals(root + "/")) {
        return "";
      }
      if (path.startsWith(root + "/")) {
        return path.substring(root.length() + 1);
      }
    }
    if (path.startsWith("/")) {
      throw E2bConnect.error(
          Code.PERMISSION_DENIED,
          "path '"
              + Escape.id(path)
              + "' is outside the workspace: AgentNest sandboxes expose only "
              + HOME
              + " (the workspace) to file calls");
    }
    return path;
  }

  /** The E2B path of a workspace path. */
  static String toE2b(String workspacePath) {
    return workspacePath.isEmpty() ? HOME : HOME + "/" + workspacePath;
  }

  static String name(String workspacePath) {
    int slash = workspacePath.lastIndexOf('/');
    return slash < 0 ? workspacePath : workspacePath.substring(slash + 1);
  }

  /** envd's EntryInfo (proto3 JSON) of a file. */
  static ObjectNode entry(FileInfo f) {
    ObjectNode n = Wire.JSON.createObjectNode();
    n.put("name", f.path().isEmpty() ? "user" : name(f.path()));
    n.put(
        "type",
        switch (f.type()) {
          case FILE -> "FILE_TYPE_FILE";
          case DIR -> "FILE_TYPE_DIRECTORY";
          case SYMLINK -> "FILE_TYPE_SYMLINK";
          case OTHER -> "FILE_TYPE_UNSPECIFIED";
        });
    n.put("path", toE2b(f.path()));
    n.put("size", Long.toString(f.size()));
    n.put("mode", f.mode() & 07777);
    n.put("permissions", permissions(f));
    n.put("owner", "user");
    n.put("group", "user");
    n.put("modifiedTime", f.modified().toString());
    return n;
  }

  private static String permissions(FileInfo f) {
    StringBuilder b = new StringBuilder(f.isDirectory() ? "d" : "-");
    String rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) {
      b.append((f.mode() & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
    }
    return b.toString();
  }

  /** The body of an E2B REST error: the SDK shows {@code message} and keys its errors on code. */
  static Map<String, Object> restError(int status, String message) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("code", status);
    m.put("message", message);
    return m;
  }
}
