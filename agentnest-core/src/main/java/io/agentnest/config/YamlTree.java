package io.agentnest.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import io.agentnest.ConfigException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;

/**
 * A small YAML node tree built from Jackson's streaming parser, in which every key and value keeps
 * its line and column. Duplicate keys, aliases and extra documents are rejected here, with their
 * location.
 */
final class YamlTree {
  /** Deeper nesting than any valid config needs. */
  static final int MAX_DEPTH = 32;

  private static final YAMLFactory FACTORY =
      YAMLFactory.builder().enable(YAMLParser.Feature.EMPTY_STRING_AS_NULL).build();
  private static final Pattern SIMPLE_KEY = Pattern.compile("[A-Za-z0-9_-]+");

  /** 1-based line and column. */
  record Pos(int line, int column) {}

  /** A parsed YAML node. */
  sealed interface Node permits MapNode, ListNode, ScalarNode {
    Pos pos();
  }

  /** A key of a mapping, where it is, and its value. */
  record Entry(String key, Pos keyPos, Node value) {}

  record MapNode(Pos pos, Map<String, Entry> entries) implements Node {}

  record ListNode(Pos pos, List<Node> items) implements Node {}

  /**
   * A scalar: {@code text} is null for YAML null ({@code ~}, {@code null} or nothing); {@code
   * number} is set for numeric tokens.
   */
  record ScalarNode(Pos pos, JsonToken token, @Nullable String text, @Nullable Number number)
      implements Node {
    boolean isNull() {
      return text == null;
    }
  }

  private final String text;
  private final String source;
  private final JsonParser parser;

  private YamlTree(String text, String source, JsonParser parser) {
    this.text = text;
    this.source = source;
    this.parser = parser;
  }

  /** Parses one YAML document; returns null for an empty one (nothing, or only comments). */
  static @Nullable Node parse(String yaml, String source) {
    String text = yaml.startsWith("\uFEFF") ? yaml.substring(1) : yaml;
    try (JsonParser p = FACTORY.createParser(text)) {
      YamlTree tree = new YamlTree(text, source, p);
      JsonToken first = p.nextToken();
      if (first == null) {
        return null;
      }
      Node root = tree.read(first, "", 0);
      if (p.nextToken() != null) {
        throw error(
            source,
            pos(p.currentTokenLocation()),
            "",
            "only one YAML document is supported: remove the '---' and what follows it");
      }
      return root;
    } catch (JsonProcessingException e) {
      throw syntaxError(source, e);
    } catch (IOException e) {
      throw new ConfigException(source + ": cannot read the YAML: " + e.getMessage());
    }
  }

  private Node read(JsonToken token, String path, int depth) throws IOException {
    Pos pos = pos(parser.currentTokenLocation());
    if (depth > MAX_DEPTH) {
      throw error(source, pos, path, "nested deeper than " + MAX_DEPTH + " levels");
    }
    if (token == JsonToken.START_OBJECT) {
      return readMap(pos, path, depth);
    }
    if (token == JsonToken.START_ARRAY) {
      List<Node> items = new ArrayList<>();
      JsonToken t;
      int i = 0;
      while ((t = parser.nextToken()) != null && t != JsonToken.END_ARRAY) {
        items.add(read(t, path + "[" + i++ + "]", depth + 1));
      }
      return new ListNode(pos, Collections.unmodifiableList(items));
    }
    if (!token.isScalarValue()) {
      throw error(source, pos, path, "unexpected YAML token " + token);
    }
    if (isAlias(parser.currentTokenLocation())) {
      throw error(
          source, pos, path, "YAML aliases (*name) are not supported: write the value out in full");
    }
    if (token == JsonToken.VALUE_NULL) {
      return new ScalarNode(pos, token, null, null);
    }
    return new ScalarNode(pos, token, parser.getText(), number(token));
  }

  private MapNode readMap(Pos pos, String path, int depth) throws IOException {
    Map<String, Entry> entries = new LinkedHashMap<>();
    JsonToken t;
    while ((t = parser.nextToken()) == JsonToken.FIELD_NAME) {
      String key = parser.currentName();
      Pos keyPos = pos(parser.currentTokenLocation());
      String childPath = child(path, key);
      Entry previous = entries.get(key);
      if (previous != null) {
        throw error(
            source,
            keyPos,
            childPath,
            "duplicate key (first defined at line "
                + previous.keyPos().line()
                + ", column "
                + previous.keyPos().column()
                + ")");
      }
      JsonToken valueToken = parser.nextToken();
      if (valueToken == null) {
        break;
      }
      entries.put(key, new Entry(key, keyPos, read(valueToken, childPath, depth + 1)));
    }
    return new MapNode(pos, Collections.unmodifiableMap(entries));
  }

  private @Nullable Number number(JsonToken token) {
    if (!token.isNumeric()) {
      return null;
    }
    try {
      return parser.getNumberValue();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** The parser reports an alias ({@code *name}) as a string: look at the source text instead. */
  private boolean isAlias(JsonLocation location) {
    long offset = location.getCharOffset();
    if (offset < 0 || offset > Integer.MAX_VALUE) {
      return false;
    }
    int index;
    try {
      // SnakeYAML counts code points, Java strings count chars.
      index = text.offsetByCodePoints(0, (int) offset);
    } catch (IndexOutOfBoundsException e) {
      return false;
    }
    return index < text.length() && text.charAt(index) == '*';
  }

  static Pos pos(JsonLocation location) {
    return new Pos(Math.max(1, location.getLineNr()), Math.max(1, location.getColumnNr()));
  }

  /** The path of {@code key} under {@code path}: {@code a.b}, or {@code a["odd key"]}. */
  static String child(String path, String key) {
    if (SIMPLE_KEY.matcher(key).matches()) {
      return path.isEmpty() ? key : path + "." + key;
    }
    return path + "[" + YamlWriter.quoted(key) + "]";
  }

  /** {@code file:line:column: path: message}. */
  static ConfigException error(String source, Pos pos, String path, String message) {
    return new ConfigException(prefix(source, pos, path) + message);
  }

  static String prefix(String source, Pos pos, String path) {
    return source
        + ":"
        + pos.line()
        + ":"
        + pos.column()
        + ": "
        + (path.isEmpty() ? "" : path + ": ");
  }

  private static ConfigException syntaxError(String source, JsonProcessingException e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof MarkedYAMLException m && m.getProblemMark() != null) {
        Mark mark = m.getProblemMark();
        String problem = m.getProblem() == null ? "invalid YAML" : m.getProblem().strip();
        StringBuilder msg = new StringBuilder("YAML syntax error: ").append(problem);
        Mark contextMark = m.getContextMark();
        if (m.getContext() != null) {
          msg.append(" (").append(m.getContext().strip());
          if (contextMark != null) {
            msg.append(" at line ")
                .append(contextMark.getLine() + 1)
                .append(", column ")
                .append(contextMark.getColumn() + 1);
          }
          msg.append(')');
        }
        return error(source, new Pos(mark.getLine() + 1, mark.getColumn() + 1), "", msg.toString());
      }
    }
    JsonLocation loc = e.getLocation();
    String msg = "YAML syntax error: " + e.getOriginalMessage().strip().replace('\n', ' ');
    return loc == null
        ? new ConfigException(source + ": " + msg)
        : error(source, pos(loc), "", msg);
  }
}
