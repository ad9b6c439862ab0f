package io.agentnest.internal.redact;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Compiled redaction rules: secret values (with their base64, hex and URL-encoded forms) and
 * well-known credential shapes. One Aho-Corasick automaton over bytes finds every secret and every
 * credential's anchor (e.g. {@code ghp_}, {@code AKIA}, {@code eyJ}) in a single pass; {@link
 * RedactingStream} uses it to mask streamed output while holding back only the bytes that could
 * still turn into a match.
 *
 * <p>Immutable and thread-safe; create one per sandbox and a stream per output stream.
 */
public final class Redactor {
  /** Masks carry the rule, never the value. */
  static String mask(String label) {
    return "[REDACTED:" + label + "]";
  }

  /** A credential shape: found by an anchor literal, extended while bytes continue it. */
  static final class TokenRule {
    final String label;
    final List<String> anchors;
    final boolean[] continues;
    final Pattern pattern;
    final int maxLen;
    final boolean anyByte;

    TokenRule(
        String label,
        List<String> anchors,
        @org.jspecify.annotations.Nullable String continueChars,
        String regex,
        int maxLen) {
      this.label = label;
      this.anchors = anchors;
      this.continues = new boolean[256];
      this.anyByte = continueChars == null;
      if (continueChars != null) {
        Pattern cls = Pattern.compile("[" + continueChars + "]");
        for (int b = 0; b < 256; b++) {
          continues[b] = cls.matcher(String.valueOf((char) b)).matches();
        }
      }
      this.pattern = Pattern.compile(regex);
      this.maxLen = maxLen;
    }

    /** Whether byte {@code b} extends the token whose bytes so far are {@code [start, end)}. */
    boolean extendsWith(byte[] buf, int start, int end, int b) {
      int len = end - start;
      if (len >= maxLen) {
        return false;
      }
      if (!anyByte) {
        return continues[b & 0xff];
      }
      // A PEM block: anything but a private key header stops at the end of its first line.
      if ((b == '\n' && len <= 100) || (len == 80 && indexOf(buf, start, end, (byte) '\n') < 0)) {
        return new String(buf, start, len, StandardCharsets.ISO_8859_1).contains("PRIVATE KEY");
      }
      return true;
    }

    /** Whether a token that may still grow is already complete (a PEM block's END line). */
    boolean complete(byte[] buf, int start, int end) {
      if (!anyByte || end - start < 60 || buf[end - 1] != '-') {
        return false;
      }
      String tail = new String(buf, end - 60, 60, StandardCharsets.ISO_8859_1);
      return tail.endsWith("KEY-----") && tail.contains("-----END ");
    }

    private static int indexOf(byte[] buf, int from, int to, byte v) {
      for (int i = from; i < to; i++) {
        if (buf[i] == v) {
          return i;
        }
      }
      return -1;
    }
  }

  static final List<TokenRule> DEFAULT_RULES =
      List.of(
          new TokenRule(
              "aws-access-key",
              List.of("AKIA", "ASIA"),
              "A-Z0-9",
              "(A[KS]IA[A-Z0-9]{16})(?![A-Z0-9])",
              40),
          new TokenRule(
              "github-token",
              List.of("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
              "A-Za-z0-9_",
              "((?:gh[pousr]_[A-Za-z0-9]{30,255})|(?:github_pat_[A-Za-z0-9_]{22,255}))",
              300),
          new TokenRule(
              "gitlab-token",
              List.of("glpat-"),
              "A-Za-z0-9_\\-",
              "(glpat-[A-Za-z0-9_\\-]{20,})",
              300),
          new TokenRule(
              "slack-token",
              List.of("xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"),
              "A-Za-z0-9\\-",
              "(xox[abprs]-[A-Za-z0-9\\-]{10,})",
              300),
          new TokenRule(
              "jwt",
              List.of("eyJ"),
              "A-Za-z0-9_.\\-",
              "(eyJ[A-Za-z0-9_\\-]{5,}\\.[A-Za-z0-9_\\-]{5,}\\.[A-Za-z0-9_\\-]{5,})",
              8192),
          new TokenRule(
              "google-api-key", List.of("AIza"), "A-Za-z0-9_\\-", "(AIza[0-9A-Za-z_\\-]{35})", 60),
          new TokenRule(
              "stripe-key",
              List.of("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
              "A-Za-z0-9",
              "([sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
              300),
          new TokenRule(
              "bearer-token",
              List.of("Bearer ", "bearer ", "BEARER "),
              "A-Za-z0-9._~+/=\\-",
              "[Bb][Ee][Aa][Rr][Ee][Rr] ([A-Za-z0-9._~+/\\-]{8,}=*)",
              4096),
          new TokenRule(
              "url-password",
              List.of("://"),
              "^\\s/?#@\"'<>",
              "://[^:/@\\s]{1,256}:([^@\\s/]{1,256})@",
              600),
          new TokenRule(
              "private-key",
              List.of("-----BEGIN "),
              null,
              "(-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[\\s\\S]*?-----END [A-Z0-9 ]{0,40}PRIVATE"
                  + " KEY-----)",
              16384));

  /** States shallower than this have a full row of 256 transitions; the rest are sparse. */
  private static final int DENSE_DEPTH = 3;

  // Automaton: Aho-Corasick over bytes.
  private final int[] dense;
  private final int[] denseIndex;
  private final byte[][] childBytes;
  private final int[][] childStates;
  private final int[] fail;
  final int[] depth;

  /** Per state: pattern ids ending here (through failure links too), or null. */
  final int[][] outputs;

  /** Per pattern id: length in bytes. */
  final int[] patternLength;

  /** Per pattern id: secret label when >= 0 maps into labels; token rule index otherwise. */
  final String[] secretLabel;

  final TokenRule[] tokenRuleOf;
  final int maxLiteral;
  final int maxToken;

  private Redactor(Map<String, String> secrets, List<TokenRule> rules) {
    List<byte[]> pats = new ArrayList<>();
    List<String> labels = new ArrayList<>();
    List<TokenRule> ruleOf = new ArrayList<>();
    for (Map.Entry<String, String> e : secrets.entrySet()) {
      for (byte[] variant : variants(e.getValue())) {
        pats.add(variant);
        labels.add(e.getKey());
        ruleOf.add(null);
      }
    }
    int maxTok = 0;
    for (TokenRule r : rules) {
      maxTok = Math.max(maxTok, r.maxLen);
      for (String a : r.anchors) {
        pats.add(a.getBytes(StandardCharsets.ISO_8859_1));
        labels.add(null);
        ruleOf.add(r);
      }
    }
    this.maxToken = maxTok;
    this.patternLength = new int[pats.size()];
    this.secretLabel = labels.toArray(new String[0]);
    this.tokenRuleOf = ruleOf.toArray(new TokenRule[0]);
    int maxLit = 0;

    // Trie
    List<int[]> gotoRows = new ArrayList<>();
    List<Integer> depths = new ArrayList<>();
    List<List<Integer>> outs = new ArrayList<>();
    gotoRows.add(newRow());
    depths.add(0);
    outs.add(new ArrayList<>());
    for (int p = 0; p < pats.size(); p++) {
      byte[] pat = pats.get(p);
      patternLength[p] = pat.length;
      if (secretLabel[p] != null) {
        maxLit = Math.max(maxLit, pat.length);
      }
      int s = 0;
      for (byte b : pat) {
        int[] row = gotoRows.get(s);
        int c = b & 0xff;
        if (row[c] < 0) {
          row[c] = gotoRows.size();
          gotoRows.add(newRow());
          depths.add(depths.get(s) + 1);
          outs.add(new ArrayList<>());
        }
        s = row[c];
      }
      outs.get(s).add(p);
    }
    this.maxLiteral = maxLit;
    int n = gotoRows.size();
    // Children per state, sparse; failure links by BFS.
    childBytes = new byte[n][];
    childStates = new int[n][];
    for (int i = 0; i < n; i++) {
      int[] row = gotoRows.get(i);
      int count = 0;
      for (int c = 0; c < 256; c++) {
        count += row[c] >= 0 ? 1 : 0;
      }
      byte[] cb = new byte[count];
      int[] cs = new int[count];
      int k = 0;
      for (int c = 0; c < 256; c++) {
        if (row[c] >= 0) {
          cb[k] = (byte) c;
          cs[k++] = row[c];
        }
      }
      childBytes[i] = cb;
      childStates[i] = cs;
      gotoRows.set(i, null); // free the build-time rows as we go
    }
    fail = new int[n];
    depth = new int[n];
    for (int i = 0; i < n; i++) {
      depth[i] = depths.get(i);
    }
    denseIndex = new int[n];
    java.util.Arrays.fill(denseIndex, -1);
    int denseCount = 0;
    for (int i = 0; i < n; i++) {
      if (depth[i] < DENSE_DEPTH) {
        denseIndex[i] = denseCount++;
      }
    }
    dense = new int[denseCount * 256];
    ArrayDeque<Integer> queue = new ArrayDeque<>();
    queue.add(0);
    while (!queue.isEmpty()) {
      int st = queue.poll();
      byte[] cb = childBytes[st];
      int[] cs = childStates[st];
      for (int k = 0; k < cb.length; k++) {
        int t = cs[k];
        fail[t] = st == 0 ? 0 : step(fail[st], cb[k] & 0xff);
        outs.get(t).addAll(outs.get(fail[t]));
        queue.add(t);
      }
      if (denseIndex[st] >= 0) {
        int base = denseIndex[st] * 256;
        for (int c = 0; c < 256; c++) {
          int child = child(st, c);
          dense[base + c] = child >= 0 ? child : (st == 0 ? 0 : step(fail[st], c));
        }
      }
    }
    outputs = new int[n][];
    for (int i = 0; i < n; i++) {
      List<Integer> o = outs.get(i);
      if (!o.isEmpty()) {
        outputs[i] = o.stream().distinct().mapToInt(Integer::intValue).toArray();
      }
    }
  }

  private int child(int st, int c) {
    byte[] cb = childBytes[st];
    for (int k = 0; k < cb.length; k++) {
      if ((cb[k] & 0xff) == c) {
        return childStates[st][k];
      }
    }
    return -1;
  }

  /** The automaton's transition: dense rows near the root, child lists and failure links deeper. */
  int step(int st, int c) {
    while (true) {
      int d = denseIndex[st];
      if (d >= 0) {
        return dense[d * 256 + c];
      }
      int t = child(st, c);
      if (t >= 0) {
        return t;
      }
      st = fail[st];
    }
  }

  private static int[] newRow() {
    int[] r = new int[256];
    java.util.Arrays.fill(r, -1);
    return r;
  }

  /** Secrets by label (e.g. the environment variable's name) plus the default credential rules. */
  public static Redactor of(Map<String, String> secrets) {
    return new Redactor(secrets, DEFAULT_RULES);
  }

  /** Only the given secrets, no credential shapes. */
  public static Redactor secretsOnly(Map<String, String> secrets) {
    return new Redactor(secrets, List.of());
  }

  /** Only the default credential rules. */
  public static Redactor defaults() {
    return of(Map.of());
  }

  /** A fresh stream state: one per output stream. */
  public RedactingStream stream() {
    return new RedactingStream(this);
  }

  /** Redacts a whole text at once (results, tracebacks, error messages). */
  public String redact(String text, Counter counter) {
    byte[] in = text.getBytes(StandardCharsets.UTF_8);
    byte[] out = redact(in, counter);
    return out == in ? text : new String(out, StandardCharsets.UTF_8);
  }

  /** Redacts bytes at once (file reads). */
  public byte[] redact(byte[] data, Counter counter) {
    RedactingStream s = stream();
    byte[] a = s.feed(data, 0, data.length);
    byte[] b = s.finish();
    s.counts().forEach(counter::add);
    if (s.counts().isEmpty()) {
      return data;
    }
    byte[] all = new byte[a.length + b.length];
    System.arraycopy(a, 0, all, 0, a.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }

  /** Counts redactions by rule (never values). */
  public interface Counter {
    void add(String rule, int count);
  }

  /** The forms in which a secret is recognised: raw, base64 (any alignment), hex, URL-encoded. */
  static List<byte[]> variants(String secret) {
    byte[] raw = secret.getBytes(StandardCharsets.UTF_8);
    Map<String, byte[]> out = new LinkedHashMap<>();
    out.put(new String(raw, StandardCharsets.ISO_8859_1), raw);
    // base64 of text containing the secret at offset k (mod 3) contains this stable core.
    for (int align = 0; align < 3; align++) {
      byte[] padded = new byte[align + raw.length];
      System.arraycopy(raw, 0, padded, align, raw.length);
      String b64 = Base64.getEncoder().withoutPadding().encodeToString(padded);
      int from = (align * 8 + 5) / 6;
      int to = (padded.length * 8) / 6;
      if (to - from >= 6) {
        String core = b64.substring(from, to);
        out.put(core, core.getBytes(StandardCharsets.ISO_8859_1));
        String url = core.replace('+', '-').replace('/', '_');
        out.put(url, url.getBytes(StandardCharsets.ISO_8859_1));
      }
    }
    StringBuilder hex = new StringBuilder();
    for (byte b : raw) {
      hex.append(String.format("%02x", b & 0xff));
    }
    String lower = hex.toString();
    out.put(lower, lower.getBytes(StandardCharsets.ISO_8859_1));
    String upper = lower.toUpperCase(Locale.ROOT);
    out.put(upper, upper.getBytes(StandardCharsets.ISO_8859_1));
    StringBuilder pct = new StringBuilder();
    for (byte b : raw) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z')
          || (c >= 'A' && c <= 'Z')
          || (c >= '0' && c <= '9')
          || c == '-'
          || c == '.'
          || c == '_'
          || c == '~') {
        pct.append((char) c);
      } else {
        pct.append('%').append(String.format("%02X", c));
      }
    }
    String pu = pct.toString();
    out.put(pu, pu.getBytes(StandardCharsets.ISO_8859_1));
    String pl = lowerHexEscapes(pu);
    out.put(pl, pl.getBytes(StandardCharsets.ISO_8859_1));
    String plus = pu.replace("%20", "+");
    out.put(plus, plus.getBytes(StandardCharsets.ISO_8859_1));
    // Python's urllib.parse.quote and encodeURI leave '/' as it is (found by the escape suite).
    String slash = pu.replace("%2F", "/");
    out.put(slash, slash.getBytes(StandardCharsets.ISO_8859_1));
    String slashLower = lowerHexEscapes(slash);
    out.put(slashLower, slashLower.getBytes(StandardCharsets.ISO_8859_1));
    return new ArrayList<>(out.values());
  }

  private static String lowerHexEscapes(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()) {
        b.append('%').append(s.substring(i + 1, i + 3).toLowerCase(Locale.ROOT));
        i += 2;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}
