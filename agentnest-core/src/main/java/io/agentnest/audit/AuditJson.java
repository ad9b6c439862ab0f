package io.agentnest.audit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The canonical line format of {@code events.jsonl} (see docs/audit.md).
 *
 * <pre>
 * {"seq":N,"time":"...","type":"...","sandbox":"..."|null,"actor":"...","schema":1,
 *  "data":{...sorted keys...},"prevHash":"...","hash":"..."}
 * </pre>
 *
 * The hash covers the exact UTF-8 bytes of the line without {@code ,"hash":"..."}: everything up to
 * and including {@code prevHash}, closed with {@code }}. Field order is fixed, data keys are sorted
 * (recursively), there is no whitespace, so the same record always has the same bytes.
 */
final class AuditJson {
  static final ObjectMapper MAPPER = mapper();

  /** {@code ,"prevHash":"<64>","hash":"<64>"}} : the fixed-length end of every line. */
  static final String PREV_KEY = ",\"prevHash\":\"";

  static final String HASH_KEY = "\",\"hash\":\"";
  static final int TRAILER_LENGTH = PREV_KEY.length() + 64 + HASH_KEY.length() + 64 + 2;

  private static final char[] HEX = "0123456789abcdef".toCharArray();
  private static final int MAX_DEPTH = 32;

  private AuditJson() {}

  private static ObjectMapper mapper() {
    ObjectMapper m = new ObjectMapper();
    m.getFactory()
        .setStreamReadConstraints(
            StreamReadConstraints.builder()
                .maxNestingDepth(MAX_DEPTH + 4)
                .maxNumberLength(64)
                .build());
    return m;
  }

  /** Data normalised to plain JSON values, with its canonical JSON text. */
  record Data(Map<String, Object> map, String json) {}

  /**
   * Normalises caller data: strings (also enums, instants, durations, paths, URIs, UUIDs, addresses
   * as their text), numbers (integers as Integer/Long/BigInteger, others as Double), booleans,
   * null, lists/arrays and maps with string keys. Maps are sorted by key.
   *
   * @throws IllegalArgumentException for other values, non-finite numbers, or nesting deeper than
   *     32
   */
  static Data normalize(@Nullable Map<String, ?> data) {
    if (data == null || data.isEmpty()) {
      return new Data(Map.of(), "{}");
    }
    Object n = Objects.requireNonNull(normalizeValue(data, 0, "data"));
    @SuppressWarnings("unchecked")
    Map<String, Object> map = (Map<String, Object>) n;
    StringBuilder sb = new StringBuilder(128);
    writeValue(sb, map);
    return new Data(map, sb.toString());
  }

  private static @Nullable Object normalizeValue(@Nullable Object v, int depth, String where) {
    if (depth > MAX_DEPTH) {
      throw new IllegalArgumentException(
          "audit data nested deeper than " + MAX_DEPTH + ": " + where);
    }
    if (v == null || v instanceof String || v instanceof Boolean) {
      return v;
    }
    if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return ((Number) v).intValue();
    }
    if (v instanceof Long l) {
      long x = l;
      if (x == (int) x) {
        return (int) x;
      }
      return l;
    }
    if (v instanceof BigInteger b) {
      return b.bitLength() < 32 ? (Object) b.intValue() : b.bitLength() < 64 ? b.longValue() : b;
    }
    if (v instanceof Double || v instanceof Float || v instanceof BigDecimal) {
      double d = ((Number) v).doubleValue();
      if (!Double.isFinite(d)) {
        throw new IllegalArgumentException("audit data " + where + " is not a finite number: " + v);
      }
      return d;
    }
    if (v instanceof AtomicInteger || v instanceof AtomicLong) {
      return normalizeValue(((Number) v).longValue(), depth, where);
    }
    if (v instanceof CharSequence
        || v instanceof Instant
        || v instanceof Duration
        || v instanceof Path
        || v instanceof URI
        || v instanceof UUID
        || v instanceof Character) {
      return v.toString();
    }
    if (v instanceof Enum<?> e) {
      return e.name();
    }
    if (v instanceof InetAddress a) {
      return a.getHostAddress();
    }
    if (v instanceof Map<?, ?> m) {
      TreeMap<String, @Nullable Object> sorted = new TreeMap<>();
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!(e.getKey() instanceof String k)) {
          throw new IllegalArgumentException("audit data " + where + " has a non-string key");
        }
        Object val = e.getValue();
        if (val == null
            || val instanceof String
            || val instanceof Boolean
            || val instanceof Integer) {
          sorted.put(k, val);
        } else {
          sorted.put(k, normalizeValue(val, depth + 1, where + "." + k));
        }
      }
      return Collections.unmodifiableMap(sorted);
    }
    if (v instanceof Iterable<?> it) {
      List<@Nullable Object> out = new ArrayList<>();
      int i = 0;
      for (Object o : it) {
        out.add(normalizeValue(o, depth + 1, where + "[" + i++ + "]"));
      }
      return Collections.unmodifiableList(out);
    }
    if (v instanceof Object[] arr) {
      return normalizeValue(Arrays.asList(arr), depth, where);
    }
    if (v instanceof int[] arr) {
      return normalizeValue(Arrays.stream(arr).boxed().toList(), depth, where);
    }
    if (v instanceof long[] arr) {
      return normalizeValue(Arrays.stream(arr).boxed().toList(), depth, where);
    }
    throw new IllegalArgumentException(
        "audit data "
            + where
            + " has a "
            + v.getClass().getName()
            + ": use strings, numbers, booleans, lists or maps");
  }

  private static void writeValue(StringBuilder sb, @Nullable Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      string(sb, s);
    } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
      sb.append(v);
    } else if (v instanceof BigInteger b) {
      sb.append(b);
    } else if (v instanceof Double d) {
      sb.append(Double.toString(d));
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        string(sb, (String) e.getKey());
        sb.append(':');
        writeValue(sb, e.getValue());
      }
      sb.append('}');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      for (int i = 0; i < l.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        writeValue(sb, l.get(i));
      }
      sb.append(']');
    } else {
      throw new IllegalStateException("not normalised: " + v.getClass());
    }
  }

  /**
   * Writes a JSON string: {@code "} and {@code \} escaped, control characters as {@code \b \f \n \r
   * \t} or {@code \}{@code u00xx}, unpaired surrogates as {@code \}{@code uxxxx}, the rest as is.
   */
  static void string(StringBuilder sb, String s) {
    sb.append('"');
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            unicodeEscape(sb, c);
          } else if (Character.isHighSurrogate(c)
              && i + 1 < n
              && Character.isLowSurrogate(s.charAt(i + 1))) {
            sb.append(c).append(s.charAt(++i));
          } else if (Character.isSurrogate(c)) {
            unicodeEscape(sb, c);
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  private static void unicodeEscape(StringBuilder sb, char c) {
    sb.append("\\u")
        .append(HEX[(c >> 12) & 0xF])
        .append(HEX[(c >> 8) & 0xF])
        .append(HEX[(c >> 4) & 0xF])
        .append(HEX[c & 0xF]);
  }

  /** The hashed part: the line without the hash, closed. Append {@code prevHash} and "}". */
  static StringBuilder head(
      long seq, Instant time, String type, @Nullable String sandbox, String actor, String data) {
    StringBuilder sb = new StringBuilder(data.length() + 280);
    sb.append("{\"seq\":").append(seq).append(",\"time\":");
    string(sb, time.toString());
    sb.append(",\"type\":");
    string(sb, type);
    sb.append(",\"sandbox\":");
    if (sandbox == null) {
      sb.append("null");
    } else {
      string(sb, sandbox);
    }
    sb.append(",\"actor\":");
    string(sb, actor);
    sb.append(",\"schema\":").append(AuditEvent.SCHEMA).append(",\"data\":").append(data);
    return sb;
  }

  /** A sealed record: its hash and its line as UTF-8 bytes ending with a newline. */
  @SuppressWarnings("ArrayRecordComponent") // internal, never compared
  record Sealed(String hash, byte[] line) {}

  private static final byte[] HASH_FIELD = ",\"hash\":\"".getBytes(StandardCharsets.US_ASCII);

  /** Completes {@code head} with {@code prevHash}, hashes it and builds the line's bytes. */
  static Sealed seal(StringBuilder head, String prevHash, MessageDigest sha) {
    head.append(PREV_KEY).append(prevHash).append("\"}");
    byte[] body = head.toString().getBytes(StandardCharsets.UTF_8);
    byte[] digest = sha.digest(body);
    // line = body without its closing brace + ,"hash":"<hex>"} + newline
    int n = body.length - 1;
    byte[] line = new byte[n + HASH_FIELD.length + 64 + 3];
    System.arraycopy(body, 0, line, 0, n);
    System.arraycopy(HASH_FIELD, 0, line, n, HASH_FIELD.length);
    int at = n + HASH_FIELD.length;
    for (byte b : digest) {
      line[at++] = (byte) HEX[(b >> 4) & 0xF];
      line[at++] = (byte) HEX[b & 0xF];
    }
    line[at++] = '"';
    line[at++] = '}';
    line[at] = '\n';
    return new Sealed(new String(line, n + HASH_FIELD.length, 64, StandardCharsets.US_ASCII), line);
  }

  /** The line of a record (canonical, so it is the line that was written). */
  static String line(AuditEvent e) {
    StringBuilder sb =
        head(e.seq(), e.time(), e.type(), e.sandboxId(), e.actor(), normalize(e.data()).json());
    sb.append(PREV_KEY).append(e.prevHash()).append(HASH_KEY).append(e.hash()).append("\"}");
    return sb.toString();
  }

  /**
   * Recomputes the hash of a line from its bytes: the line without its {@code ,"hash":"..."} field.
   * Returns null when the line does not end with a hash field.
   */
  static @Nullable String recomputeHash(String line, MessageDigest sha) {
    int n = line.length();
    int at = n - (64 + 11);
    if (at < 0 || !line.startsWith(",\"hash\":\"", at) || !line.endsWith("\"}")) {
      return null;
    }
    String body = line.substring(0, at) + "}";
    return hex(sha.digest(body.getBytes(StandardCharsets.UTF_8)));
  }

  /** The part of a line the index keeps as searchable text: everything before prevHash. */
  static String searchText(String line) {
    int at = line.length() - TRAILER_LENGTH;
    if (at > 0 && line.startsWith(PREV_KEY, at)) {
      return line.substring(0, at);
    }
    int i = line.lastIndexOf(PREV_KEY);
    return i > 0 ? line.substring(0, i) : line;
  }

  /** The data object's JSON text inside a line written by {@link #head}. */
  static String dataJson(String line) {
    String text = searchText(line);
    int at = text.indexOf(",\"data\":");
    return at < 0 ? "{}" : text.substring(at + 8);
  }

  /** Rebuilds a line from its search text and hashes. */
  static String joinLine(String text, String prevHash, String hash) {
    return text + PREV_KEY + prevHash + HASH_KEY + hash + "\"}";
  }

  /** Parses and validates a line; does not check its hash. */
  static AuditEvent parse(String line) {
    JsonNode n;
    try {
      n = MAPPER.readTree(line);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage(), e);
    }
    if (n == null || !n.isObject()) {
      throw new IllegalArgumentException("not a JSON object");
    }
    JsonNode seq = n.get("seq");
    if (seq == null || !seq.canConvertToExactIntegral() || !seq.canConvertToLong()) {
      throw new IllegalArgumentException("seq is missing or not an integer");
    }
    Instant time;
    try {
      time = Instant.parse(text(n, "time"));
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("time is not an ISO-8601 instant", e);
    }
    String type = text(n, "type");
    JsonNode sb = n.get("sandbox");
    String sandbox;
    if (sb == null || sb.isNull()) {
      sandbox = null;
    } else if (sb.isTextual()) {
      sandbox = sb.asText();
    } else {
      throw new IllegalArgumentException("sandbox is not a string");
    }
    String actor = text(n, "actor");
    JsonNode schema = n.get("schema");
    if (schema == null || !schema.isInt()) {
      throw new IllegalArgumentException("schema is missing or not an integer");
    }
    JsonNode data = n.get("data");
    if (data == null || !data.isObject()) {
      throw new IllegalArgumentException("data is missing or not an object");
    }
    String prev = hexField(n, "prevHash");
    String hash = hexField(n, "hash");
    @SuppressWarnings("unchecked")
    Map<String, Object> map = (Map<String, Object>) Objects.requireNonNull(toJava(data));
    return new AuditEvent(
        seq.asLong(), time, type, sandbox, actor, map, prev, hash, schema.asInt());
  }

  private static String text(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException(field + " is missing or not a string");
    }
    return v.asText();
  }

  private static String hexField(JsonNode n, String field) {
    String s = text(n, field);
    if (!isHash(s)) {
      throw new IllegalArgumentException(field + " is not 64 lower-case hex digits");
    }
    return s;
  }

  static boolean isHash(String s) {
    if (s.length() != 64) {
      return false;
    }
    for (int i = 0; i < 64; i++) {
      char c = s.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  private static @Nullable Object toJava(JsonNode n) {
    switch (n.getNodeType()) {
      case OBJECT -> {
        Map<String, @Nullable Object> m = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = n.fields();
        while (it.hasNext()) {
          Map.Entry<String, JsonNode> e = it.next();
          m.put(e.getKey(), toJava(e.getValue()));
        }
        return Collections.unmodifiableMap(m);
      }
      case ARRAY -> {
        List<@Nullable Object> l = new ArrayList<>(n.size());
        for (JsonNode c : n) {
          l.add(toJava(c));
        }
        return Collections.unmodifiableList(l);
      }
      case STRING -> {
        return n.asText();
      }
      case BOOLEAN -> {
        return n.asBoolean();
      }
      case NUMBER -> {
        if (n.isInt()) {
          return n.intValue();
        }
        if (n.isLong()) {
          return n.longValue();
        }
        if (n.isBigInteger()) {
          return n.bigIntegerValue();
        }
        return n.doubleValue();
      }
      default -> {
        return null;
      }
    }
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available", e);
    }
  }

  static String hex(byte[] b) {
    char[] out = new char[b.length * 2];
    for (int i = 0; i < b.length; i++) {
      out[2 * i] = HEX[(b[i] >> 4) & 0xF];
      out[2 * i + 1] = HEX[b[i] & 0xF];
    }
    return new String(out);
  }

  static byte[] unhex(String s) {
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) ((nibble(s.charAt(2 * i)) << 4) | nibble(s.charAt(2 * i + 1)));
    }
    return out;
  }

  private static int nibble(char c) {
    return c <= '9' ? c - '0' : c - 'a' + 10;
  }
}
