package io.agentnest.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Writes the effective configuration as YAML (with comments) or JSON, from a tree of {@link Item}s.
 */
final class YamlWriter {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern PLAIN = Pattern.compile("[A-Za-z/_][A-Za-z0-9/_.@+:-]*");
  private static final Set<String> RESERVED =
      Set.of("true", "false", "yes", "no", "on", "off", "y", "n", "null");

  /**
   * A key with a scalar or a {@code List<Item>} (a group, or the entries of a map) as value; a null
   * value is written as a comment only (the key is not set).
   */
  record Item(String key, @Nullable Object value, @Nullable String comment) {}

  /** A list of maps, written in flow style (JSON, which is valid YAML). */
  record Flow(List<Map<String, Object>> items) {}

  private YamlWriter() {}

  static String yaml(List<String> header, List<Item> items) {
    StringBuilder out = new StringBuilder();
    for (String h : header) {
      out.append("# ").append(h).append('\n');
    }
    write(out, items, 0);
    return out.toString();
  }

  private static void write(StringBuilder out, List<Item> items, int indent) {
    String pad = " ".repeat(indent);
    for (Item item : items) {
      Object v = item.value();
      if (v == null) {
        out.append(pad).append("# ").append(item.key()).append(": ");
        out.append(item.comment() == null ? "not set" : item.comment()).append('\n');
        continue;
      }
      out.append(pad).append(key(item.key())).append(':');
      if (v instanceof List<?> list) {
        if (list.isEmpty()) {
          out.append(" {}");
        }
        comment(out, item.comment());
        @SuppressWarnings("unchecked")
        List<Item> children = (List<Item>) list;
        write(out, children, indent + 2);
      } else if (v instanceof Flow flow) {
        out.append(' ').append(flowJson(flow));
        comment(out, item.comment());
      } else {
        out.append(' ').append(scalar(v));
        comment(out, item.comment());
      }
    }
  }

  private static void comment(StringBuilder out, @Nullable String comment) {
    if (comment != null) {
      out.append("  # ").append(comment.replace('\n', ' '));
    }
    out.append('\n');
  }

  static String json(List<Item> items) {
    try {
      return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(tree(items));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  private static Map<String, Object> tree(List<Item> items) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (Item item : items) {
      Object v = item.value();
      if (v instanceof List<?> list) {
        @SuppressWarnings("unchecked")
        List<Item> children = (List<Item>) list;
        m.put(item.key(), tree(children));
      } else if (v instanceof Flow flow) {
        m.put(item.key(), flow.items());
      } else if (v != null) {
        m.put(item.key(), v);
      }
    }
    return m;
  }

  private static String flowJson(Flow flow) {
    try {
      return JSON.writeValueAsString(flow.items());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }

  private static String key(String k) {
    return isPlain(k) ? k : quoted(k);
  }

  private static String scalar(@Nullable Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Boolean || v instanceof Long || v instanceof Integer || v instanceof Double) {
      return v.toString();
    }
    String s = v.toString();
    return isPlain(s) || isSizeOrDuration(s) ? s : quoted(s);
  }

  private static boolean isPlain(String s) {
    return PLAIN.matcher(s).matches()
        && !s.endsWith(":")
        && !RESERVED.contains(s.toLowerCase(Locale.ROOT));
  }

  private static boolean isSizeOrDuration(String s) {
    return s.matches("[0-9]+(ms|[kmgtsmhd])");
  }

  /** A YAML double-quoted scalar (JSON string syntax is valid YAML). */
  static String quoted(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
