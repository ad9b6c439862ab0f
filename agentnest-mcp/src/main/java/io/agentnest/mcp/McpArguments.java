package io.agentnest.mcp;

import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A tool call's arguments as the model sent them: read, typed, and refused with a message for it.
 */
final class McpArguments {
  private McpArguments() {}

  /** A bad argument: its message is shown to the model. */
  static final class ArgumentException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ArgumentException(String message) {
      super(message);
    }
  }

  static Map<String, Object> args(CallToolRequest request) {
    Map<String, Object> a = request.arguments();
    return a == null ? Map.of() : a;
  }

  static String string(Map<String, Object> args, String name) {
    Object v = args.get(name);
    if (v == null) {
      throw new ArgumentException("'" + name + "' is required");
    }
    if (!(v instanceof String s)) {
      throw new ArgumentException("'" + name + "' must be a string");
    }
    return s;
  }

  static @Nullable String optString(Map<String, Object> args, String name) {
    Object v = args.get(name);
    if (v == null) {
      return null;
    }
    if (!(v instanceof String s)) {
      throw new ArgumentException("'" + name + "' must be a string");
    }
    return s;
  }

  static boolean bool(Map<String, Object> args, String name) {
    Object v = args.get(name);
    if (v == null) {
      return false;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    if ("true".equals(v) || "false".equals(v)) {
      return "true".equals(v);
    }
    throw new ArgumentException("'" + name + "' must be true or false");
  }

  static @Nullable Duration timeout(Map<String, Object> args) {
    Object v = args.get("timeout_seconds");
    if (v == null) {
      return null;
    }
    double seconds;
    if (v instanceof Number n) {
      seconds = n.doubleValue();
    } else {
      try {
        seconds = Double.parseDouble(String.valueOf(v));
      } catch (NumberFormatException e) {
        throw new ArgumentException("'timeout_seconds' must be a number of seconds, e.g. 30");
      }
    }
    if (!(seconds > 0) || seconds > 86_400) {
      throw new ArgumentException("'timeout_seconds' must be between 0 and 86400 seconds");
    }
    return Duration.ofMillis((long) Math.ceil(seconds * 1000));
  }
}
